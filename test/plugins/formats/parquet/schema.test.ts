import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import parquet from "../../../../src/plugins/formats/parquet/index.js"
import { decimalByteLength, schemaProblems } from "../../../../src/plugins/formats/parquet/schema.js"
import { type BatchSchema, type LogicalType, makeBatch } from "../../../../src/core/batch.js"
import { FormatDriver } from "../../../../src/core/plugin.js"
import { ByteBuffer } from "../../../../src/plugins/formats/parquet/writer/bytes.js"
import { type SchemaElement, type TimeUnit, writeFileMeta } from "../../../../src/plugins/formats/parquet/writer/metadata.js"
import { allTypesSchema } from "./fixtures.js"
import { parquetMetadata, parquetRead } from "hyparquet"
import { compressors } from "hyparquet-compressors"
import { concat, metadataOf } from "./read-back.js"

const driver = Effect.provide(
  FormatDriver,
  parquet.make(Schema.decodeUnknownSync(parquet.config)({}), { configDir: ".", env: {} })
).pipe(Effect.orDie)

describe("parquet schema", () => {
  it.effect("the footer carries the physical and logical type of every column, all OPTIONAL", () =>
    Effect.gen(function* () {
      const encoder = yield* (yield* driver).open(allTypesSchema)
      const schema = metadataOf(concat(yield* encoder.finish)).schema
      const byName = (name: string) => schema.find((element) => element.name === name)!
      const decimal = (precision: number, scale: number) => ({
        converted_type: "DECIMAL",
        logical_type: { type: "DECIMAL", precision, scale },
        precision,
        scale
      })
      const expectations: Record<string, object> = {
        i16: { type: "INT32", converted_type: "INT_16", logical_type: { type: "INTEGER", bitWidth: 16, isSigned: true } },
        i32: { type: "INT32" },
        i64: { type: "INT64" },
        f32: { type: "FLOAT" },
        f64: { type: "DOUBLE" },
        dec_5_2: { type: "INT32", ...decimal(5, 2) },
        dec_18_4: { type: "INT64", ...decimal(18, 4) },
        dec_38_10: { type: "FIXED_LEN_BYTE_ARRAY", type_length: 16, ...decimal(38, 10) },
        dec_50_0: { type: "FIXED_LEN_BYTE_ARRAY", type_length: 21, ...decimal(50, 0) },
        txt: { type: "BYTE_ARRAY", converted_type: "UTF8", logical_type: { type: "STRING" } },
        flag: { type: "BOOLEAN" },
        day: { type: "INT32", converted_type: "DATE", logical_type: { type: "DATE" } },
        clock: { type: "INT64", logical_type: { type: "TIME", isAdjustedToUTC: false, unit: "MICROS" } },
        ts: { type: "INT64", logical_type: { type: "TIMESTAMP", isAdjustedToUTC: false, unit: "MICROS" } },
        tstz: {
          type: "INT64",
          converted_type: "TIMESTAMP_MICROS",
          logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MICROS" }
        },
        id: { type: "FIXED_LEN_BYTE_ARRAY", type_length: 16, logical_type: { type: "UUID" } },
        doc: { type: "BYTE_ARRAY", converted_type: "JSON", logical_type: { type: "JSON" } },
        blob: { type: "BYTE_ARRAY" },
        span: { type: "BYTE_ARRAY", converted_type: "UTF8", logical_type: { type: "STRING" } }
      }
      for (const [name, expected] of Object.entries(expectations)) {
        expect(byName(name), name).toEqual({ name, repetition_type: "OPTIONAL", ...expected })
      }

      const start = schema.findIndex((element) => element.name === "ints")
      expect(schema.slice(start, start + 3)).toEqual([
        { name: "ints", repetition_type: "OPTIONAL", num_children: 1, converted_type: "LIST", logical_type: { type: "LIST" } },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        { name: "element", repetition_type: "OPTIONAL", type: "INT32" }
      ])
      expect(schema[0]).toEqual({ name: "root", num_children: allTypesSchema.columns.length })
    })
  )

  // The footer's unit is what gives the stored integers their meaning: checked against the instants written (known
  // independently of the writer), so a unit that does not match the values — or cannot hold their microseconds —
  // fails, whichever of the two the writer got wrong.
  it.effect("time and timestamp units are the units of the stored values, fine enough for their microseconds", () =>
    Effect.gen(function* () {
      const instant = BigInt(Date.UTC(2026, 0, 2, 3, 4, 5, 123)) * 1000n + 456n
      const clock = ((3n * 60n + 4n) * 60n + 5n) * 1_000_000n + 123_456n
      const times: BatchSchema = {
        columns: [
          { name: "clock", type: { kind: "time" } },
          { name: "ts", type: { kind: "timestamp" } },
          { name: "tstz", type: { kind: "timestamptz" } }
        ]
      }
      const encoder = yield* (yield* driver).open(times)
      const written = yield* encoder.write(makeBatch(times, [[clock, -1n], [instant, -1n], [instant, 1n]]))
      const file = concat([...written, ...(yield* encoder.finish)])
      const metadata = metadataOf(file)
      // The raw INT64s, read with the annotations taken off (a reader would otherwise convert them by the unit).
      const raw = yield* Effect.promise(async () => {
        let rows: Array<Array<unknown>> = []
        await parquetRead({
          file,
          metadata: { ...metadata, schema: metadata.schema.map(({ logical_type: _l, converted_type: _c, ...element }) => element) },
          compressors,
          rowFormat: "array",
          onComplete: (read) => {
            rows = read as Array<Array<unknown>>
          }
        })
        return rows
      })
      const NANOS_PER_UNIT: Record<string, bigint> = { MILLIS: 1_000_000n, MICROS: 1_000n, NANOS: 1n }
      const expectedNanos = [[clock * 1000n, -1000n], [instant * 1000n, -1000n], [instant * 1000n, 1000n]]
      times.columns.forEach(({ name }, c) => {
        const logical = metadata.schema.find((element) => element.name === name)?.logical_type
        const unit = logical !== undefined && "unit" in logical ? String(logical.unit) : "(none)"
        const perUnit = NANOS_PER_UNIT[unit]
        expect(perUnit, `${name}: unit ${unit}`).toBeDefined()
        for (const [row, nanos] of expectedNanos[c]!.entries()) {
          expect(nanos % perUnit!, `${name}: ${unit} cannot hold microseconds`).toBe(0n)
          expect(BigInt(raw[row]![c] as bigint) * perUnit!, `${name}, row ${row}`).toBe(nanos)
        }
      })
    })
  )

  it("the footer writer records the time unit each element declares (not always MICROS)", () => {
    const units: ReadonlyArray<TimeUnit> = ["MILLIS", "MICROS", "NANOS"]
    const schema: Array<SchemaElement> = [
      { name: "root", num_children: units.length * 2 },
      ...units.flatMap((unit, i): Array<SchemaElement> => [
        { name: `t${i}`, type: "INT64", repetition_type: "OPTIONAL", logical_type: { type: "TIME", isAdjustedToUTC: i === 1, unit } },
        { name: `ts${i}`, type: "INT64", repetition_type: "OPTIONAL", logical_type: { type: "TIMESTAMP", isAdjustedToUTC: i !== 1, unit } }
      ])
    ]
    const footer = new ByteBuffer(64)
    writeFileMeta(footer, { schema, numRows: 0, rowGroups: [], keyValues: [], createdBy: "test" })
    const meta = footer.written()
    const file = new Uint8Array(4 + meta.length + 8)
    const magic = new TextEncoder().encode("PAR1")
    file.set(magic, 0)
    file.set(meta, 4)
    new DataView(file.buffer).setUint32(4 + meta.length, meta.length, true)
    file.set(magic, 8 + meta.length)
    const read = parquetMetadata(file.buffer).schema
    units.forEach((unit, i) => {
      expect(read.find((element) => element.name === `t${i}`)?.logical_type).toEqual({ type: "TIME", isAdjustedToUTC: i === 1, unit })
      expect(read.find((element) => element.name === `ts${i}`)?.logical_type).toEqual({ type: "TIMESTAMP", isAdjustedToUTC: i !== 1, unit })
    })
  })

  it("decimal widths: the fewest bytes that hold the precision", () => {
    expect(decimalByteLength(19)).toBe(9)
    expect(decimalByteLength(38)).toBe(16)
    expect(decimalByteLength(39)).toBe(17)
    expect(decimalByteLength(76)).toBe(32)
    for (let precision = 1; precision <= 76; precision++) {
      const bytes = decimalByteLength(precision)
      expect(1n << BigInt(bytes * 8 - 1)).toBeGreaterThanOrEqual(10n ** BigInt(precision))
      expect(1n << BigInt((bytes - 1) * 8 - 1)).toBeLessThan(10n ** BigInt(precision))
    }
  })

  describe("validate", () => {
    const one = (type: LogicalType, name = "amount"): BatchSchema => ({ columns: [{ name, type }] })
    const reject = (schema: BatchSchema) =>
      Effect.gen(function* () {
        return yield* Effect.flip((yield* driver).validate(schema))
      })

    it.effect("accepts every logical type", () =>
      Effect.gen(function* () {
        yield* (yield* driver).validate(allTypesSchema)
        expect(schemaProblems(allTypesSchema)).toEqual([])
      })
    )

    it.effect("rejects decimals Parquet readers cannot hold, naming the column and the fix", () =>
      Effect.gen(function* () {
        for (const type of [
          { kind: "decimal", precision: 77, scale: 2 },
          { kind: "decimal", precision: 0, scale: 0 },
          { kind: "decimal", precision: 5, scale: -2 },
          { kind: "decimal", precision: 2, scale: 5 },
          { kind: "list", element: { kind: "decimal", precision: 100, scale: 0 } }
        ] as const) {
          const error = yield* reject(one(type))
          expect(error._tag).toBe("FormatError")
          expect(error.message).toContain(`column "amount"`)
          expect(error.hint).toContain("columns:")
        }
      })
    )

    it.effect("rejects no columns, empty and duplicate names", () =>
      Effect.gen(function* () {
        expect((yield* reject({ columns: [] })).message).toContain("no columns")
        expect((yield* reject(one({ kind: "int32" }, ""))).message).toContain("empty name")
        const twice: BatchSchema = {
          columns: [
            { name: "a", type: { kind: "int32" } },
            { name: "a", type: { kind: "string" } }
          ]
        }
        expect((yield* reject(twice)).message).toContain(`"a" appears more than once`)
      })
    )

    it.effect("open validates too", () =>
      Effect.gen(function* () {
        const error = yield* Effect.flip((yield* driver).open(one({ kind: "decimal", precision: 80, scale: 0 })))
        expect(error.message).toContain("precision outside 1–76")
      })
    )
  })
})
