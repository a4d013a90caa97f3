import { describe, expect, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { DEFAULT_ROW_GROUP_BYTES } from "../../../../src/plugins/formats/parquet/config.js"
import { makeCodec } from "../../../../src/plugins/formats/parquet/compressors.js"
import { makePartEncoder, PartBuffersPool } from "../../../../src/plugins/formats/parquet/encoder.js"
import parquet from "../../../../src/plugins/formats/parquet/index.js"
import { releaseBuffers } from "../../../../src/core/release-buffers.js"
import { type Batch, batchFromColumns, type BatchSchema, type LogicalType, makeBatch, type Value } from "../../../../src/core/batch.js"
import { FormatDriver } from "../../../../src/core/plugin.js"
import { allTypesRows, allTypesSchema, encodeAll, rowObjects } from "./fixtures.js"
import { concat, metadataOf, readRows } from "./read-back.js"

const context = { configDir: ".", env: {} }

const driverWith = (input: Record<string, unknown>) =>
  Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(parquet.config)(input, { onExcessProperty: "error" })
    return yield* Effect.provide(FormatDriver, parquet.make(config, context))
  }).pipe(Effect.orDie)

// 20 rows: the fixture rows four times, so every row group mixes NULLs and edge values.
const rows: ReadonlyArray<ReadonlyArray<Value>> = Array.from({ length: 4 }, () => allTypesRows).flat()
const expected = rowObjects(allTypesSchema.columns, rows)

const readBack = (chunks: ReadonlyArray<Uint8Array>) => Effect.promise(() => readRows(concat(chunks)))

describe("parquet encoder", () => {
  const codecs = [
    { config: {}, codec: "ZSTD", label: "zstd" },
    { config: { compression: "zstd", compression_level: 19 }, codec: "ZSTD", label: "zstd" },
    { config: { compression: "snappy" }, codec: "SNAPPY", label: "snappy" },
    { config: { compression: "gzip", compression_level: 9 }, codec: "GZIP", label: "gzip" },
    { config: { compression: "none" }, codec: "UNCOMPRESSED", label: "none" }
  ] as const

  for (const { config, codec, label } of codecs) {
    it.effect(`round-trips every logical type exactly across row groups (${JSON.stringify(config)})`, () =>
      Effect.gen(function* () {
        const driver = yield* driverWith({ ...config, row_group_size: 6 })
        expect(driver.compression).toBe(label)
        const encoder = yield* driver.open(allTypesSchema)
        const { writes, finish } = yield* encodeAll(encoder, allTypesSchema, rows, [2, 3, 1, 5])
        const file = concat([...writes.flat(), ...finish])

        expect(yield* readBack([...writes.flat(), ...finish])).toEqual(expected)
        const metadata = metadataOf(file)
        expect(metadata.num_rows).toBe(20n)
        expect(metadata.row_groups.map((group) => group.num_rows)).toEqual([6n, 6n, 6n, 2n])
        const codecs = new Set(metadata.row_groups.flatMap((group) => group.columns.map((c) => c.meta_data?.codec)))
        expect([...codecs]).toEqual([codec])
      })
    )
  }

  it.effect("columns that are NULL in every row (empty pages) work with every codec", () =>
    Effect.gen(function* () {
      for (const compression of ["zstd", "snappy", "gzip", "none"]) {
        const driver = yield* driverWith({ compression, row_group_size: 2 })
        const encoder = yield* driver.open(allTypesSchema)
        const nulls = Array.from({ length: 3 }, () => allTypesSchema.columns.map(() => null))
        const { writes, finish } = yield* encodeAll(encoder, allTypesSchema, nulls, [3])
        expect(yield* readBack([...writes.flat(), ...finish])).toEqual(rowObjects(allTypesSchema.columns, nulls))
      }
    })
  )

  it.effect("floats keep -0 next to 0 even when values repeat (no dictionary folding)", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = {
        columns: [
          { name: "f64", type: { kind: "float64" } },
          { name: "f32", type: { kind: "float32" } },
          { name: "list", type: { kind: "list", element: { kind: "float64" } } }
        ]
      }
      const values = Array.from({ length: 200 }, (_, i) => [0, -0, 1.5, Number.NaN][i % 4]!)
      const all = values.map((value): Array<Value> => [value, value, [value, -value]])
      const encoder = yield* (yield* driverWith({})).open(schema)
      const { writes, finish } = yield* encodeAll(encoder, schema, all, [200])
      expect(yield* readBack([...writes.flat(), ...finish])).toEqual(rowObjects(schema.columns, all))
    })
  )

  it.effect("hands bytes out after each row group, not only at finish", () =>
    Effect.gen(function* () {
      const driver = yield* driverWith({ row_group_size: 3 })
      const schema: BatchSchema = { columns: [{ name: "n", type: { kind: "int64" } }] }
      const encoder = yield* driver.open(schema)
      const write = (values: Array<Value>) => encoder.write(makeBatch(schema, [values]))
      const size = (chunks: ReadonlyArray<Uint8Array>) => chunks.reduce((sum, chunk) => sum + chunk.length, 0)

      const first = yield* write([1n])
      expect(new TextDecoder().decode(concat(first))).toBe("PAR1")
      expect(size(yield* write([2n]))).toBe(0)
      const group = yield* write([3n, 4n])
      expect(size(group)).toBeGreaterThan(0)
      expect(size(yield* write([5n]))).toBe(0)
      const last = yield* write([6n, 7n, 8n, 9n])
      expect(size(last)).toBeGreaterThan(0)
      const finish = yield* encoder.finish
      expect(new TextDecoder().decode(concat(finish).slice(-4))).toBe("PAR1")

      const file = concat([...first, ...group, ...last, ...finish])
      expect(metadataOf(file).row_groups.map((g) => g.num_rows)).toEqual([3n, 3n, 3n])
      expect(yield* readBack([...first, ...group, ...last, ...finish])).toEqual(
        [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n].map((n) => ({ n }))
      )
    })
  )

  it.effect("by default, wide rows close a row group early (memory stays bounded); an explicit size is exact", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = {
        columns: [
          { name: "n", type: { kind: "int32" } },
          { name: "doc", type: { kind: "string" } }
        ]
      }
      const wide = "x".repeat(100_000)
      const all = Array.from({ length: 300 }, (_, i): Array<Value> => [i, wide])
      const groupsWith = (config: Record<string, unknown>) =>
        Effect.gen(function* () {
          const encoder = yield* (yield* driverWith(config)).open(schema)
          const { writes, finish } = yield* encodeAll(encoder, schema, all, [10])
          const chunks = [...writes.flat(), ...finish]
          expect(yield* readBack(chunks)).toEqual(rowObjects(schema.columns, all))
          return metadataOf(concat(chunks)).row_groups.map((group) => Number(group.num_rows))
        })

      const adaptive = yield* groupsWith({})
      expect(adaptive.length).toBeGreaterThan(2)
      // The byte budget in 100 kB values, checked after each 10-row batch.
      const expected = Math.ceil(DEFAULT_ROW_GROUP_BYTES / 100_000 / 10) * 10
      expect(expected).toBeLessThan(300)
      for (const rowsInGroup of adaptive.slice(0, -1)) expect(rowsInGroup).toBe(expected)
      expect(yield* groupsWith({ row_group_size: 200 })).toEqual([200, 100])
    })
  )

  it.effect("text reaches the file as the batch's UTF-8 bytes: no string is made or encoded per value", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = {
        columns: [
          { name: "name", type: { kind: "string" } },
          { name: "doc", type: { kind: "json" } },
          { name: "amount", type: { kind: "decimal", precision: 12, scale: 2 } },
          { name: "tags", type: { kind: "list", element: { kind: "string" } } }
        ]
      }
      const count = 5_000
      const all = Array.from({ length: count }, (_, i): Array<Value> => [`name ${i} é`, `{"i":${i}}`, `${i}.25`, [`t${i % 3}`, null]])
      const batch = makeBatch(schema, [0, 1, 2, 3].map((c) => all.map((row) => row[c]!)))
      const encoder = yield* (yield* driverWith({})).open(schema)
      const encode = vi.spyOn(TextEncoder.prototype, "encode")
      const encodeInto = vi.spyOn(TextEncoder.prototype, "encodeInto")
      const decode = vi.spyOn(TextDecoder.prototype, "decode")
      const fromString = vi.spyOn(Buffer, "from")
      const chunks = [...(yield* encoder.write(batch)), ...(yield* encoder.finish)]
      const calls = encode.mock.calls.length + encodeInto.mock.calls.length + decode.mock.calls.length + fromString.mock.calls.length
      vi.restoreAllMocks()
      // The footer's strings (schema names, key/value metadata), never one per value of the 5 000 rows.
      expect(calls).toBeLessThan(40)
      expect(yield* readBack(chunks)).toEqual(rowObjects(schema.columns, all))
    })
  )

  it.effect("a part without rows is a valid file with the schema and no rows", () =>
    Effect.gen(function* () {
      const driver = yield* driverWith({})
      const encoder = yield* driver.open(allTypesSchema)
      const chunks = yield* encoder.finish
      const metadata = metadataOf(concat(chunks))
      expect(metadata.num_rows).toBe(0n)
      expect(metadata.row_groups).toEqual([])
      expect(metadata.schema[0]?.num_children).toBe(allTypesSchema.columns.length)
      expect(yield* readBack(chunks)).toEqual([])
    })
  )

  it.effect("identical input gives identical bytes", () =>
    Effect.gen(function* () {
      const driver = yield* driverWith({ row_group_size: 7 })
      const once = Effect.flatMap(driver.open(allTypesSchema), (encoder) =>
        encodeAll(encoder, allTypesSchema, rows, [4])
      ).pipe(Effect.map(({ writes, finish }) => new Uint8Array(concat([...writes.flat(), ...finish]))))
      const a = yield* once
      const b = yield* once
      expect(Buffer.compare(a, b)).toBe(0)
      expect(metadataOf(a.buffer).created_by).toBe("rivet")
    })
  )

  it.effect("many rows: multi-page, dictionary-encoded and unique columns read back exactly", () =>
    Effect.gen(function* () {
      const driver = yield* driverWith({ row_group_size: 20_000 })
      const schema: BatchSchema = {
        columns: [
          { name: "id", type: { kind: "int64" } },
          { name: "status", type: { kind: "string" } },
          { name: "body", type: { kind: "string" } },
          { name: "price", type: { kind: "decimal", precision: 12, scale: 2 } }
        ]
      }
      const count = 45_000
      const make = (i: number): Array<Value> => [
        BigInt(i),
        i % 11 === 0 ? null : ["new", "paid", "shipped"][i % 3]!,
        `${"body ".repeat(20)}${i}`,
        `${i}.${String(i % 100).padStart(2, "0")}`
      ]
      const all = Array.from({ length: count }, (_, i) => make(i))
      const encoder = yield* driver.open(schema)
      const { writes, finish } = yield* encodeAll(encoder, schema, all, [10_000, 7_000])
      const chunks = [...writes.flat(), ...finish]
      const metadata = metadataOf(concat(chunks))
      expect(metadata.row_groups.map((g) => g.num_rows)).toEqual([20_000n, 20_000n, 5_000n])
      const status = metadata.row_groups[0]!.columns[1]!.meta_data!
      expect(status.encodings).toContain("RLE_DICTIONARY")
      const back = yield* readBack(chunks)
      expect(back).toEqual(rowObjects(schema.columns, all))
    })
  )

  describe("failures", () => {
    const decimalSchema: BatchSchema = { columns: [{ name: "amount", type: { kind: "decimal", precision: 5, scale: 2 } }] }

    it.effect("a value that does not fit its decimal names the column, the row and the fix", () =>
      Effect.gen(function* () {
        const driver = yield* driverWith({})
        const encoder = yield* driver.open(decimalSchema)
        yield* encoder.write(makeBatch(decimalSchema, [["1.00", "2.00"]]))
        const error = yield* Effect.flip(encoder.write(makeBatch(decimalSchema, [["3.00", "1234.5"]])))
        expect(error._tag).toBe("FormatError")
        expect(error.message).toContain(`column "amount", row 4 of the part`)
        expect(error.message).toContain("decimal(5,2)")
        expect(error.hint).toContain("columns:")
        // The part is unusable after a failure.
        const again = yield* Effect.exit(encoder.finish)
        expect(Exit.isFailure(again)).toBe(true)
      })
    )

    it("a value of the wrong kind is refused when the batch is built, naming the column and the row", () => {
      const cases: Array<[BatchSchema, Value]> = [
        [{ columns: [{ name: "n", type: { kind: "int64" } }] }, 5],
        [{ columns: [{ name: "n", type: { kind: "int16" } }] }, 40_000],
        [{ columns: [{ name: "u", type: { kind: "uuid" } }] }, "not-a-uuid"],
        [{ columns: [{ name: "l", type: { kind: "list", element: { kind: "int32" } } }] }, [1, "x"]]
      ]
      for (const [schema, value] of cases) {
        expect(() => makeBatch(schema, [[null, value]])).toThrow(`column "${schema.columns[0]!.name}" (`)
        expect(() => makeBatch(schema, [[null, value]])).toThrow("row 2:")
      }
    })

    it.effect("decimal text that is not a number is a FormatError naming the row of the part, never a defect", () =>
      Effect.gen(function* () {
        const driver = yield* driverWith({})
        const schema: BatchSchema = { columns: [{ name: "d", type: { kind: "decimal", precision: 10, scale: 2 } }] }
        const encoder = yield* driver.open(schema)
        const error = yield* Effect.flip(encoder.write(makeBatch(schema, [[null, "NaN"]])))
        expect(error.message).toContain(`column "d", row 2 of the part`)
      })
    )

    it.effect("writing after finish and mismatched batches fail", () =>
      Effect.gen(function* () {
        const driver = yield* driverWith({})
        const encoder = yield* driver.open(decimalSchema)
        const one = makeBatch(decimalSchema, [["1.00"]]).columns[0]!
        const twoColumns = batchFromColumns(decimalSchema, [one, one])
        expect((yield* Effect.flip(encoder.write(twoColumns))).message).toContain("has 2 columns")
        yield* encoder.finish
        const late = yield* Effect.flip(encoder.write(makeBatch(decimalSchema, [["1.00"]])))
        expect(late.message).toContain("already finished")
      })
    )
  })
})

describe("parquet parts sharing working buffers (PartBuffersPool)", () => {
  const bytesOf = (encoder: ReturnType<typeof makePartEncoder>, batchRows: number) =>
    Effect.map(encodeAll(encoder, allTypesSchema, rows, [batchRows]), ({ writes, finish }) =>
      Buffer.from(concat([...writes.flat(), ...finish]))
    )

  it.effect("the next part takes the buffers the last one gave back, and writes the same bytes as with fresh ones", () =>
    Effect.gen(function* () {
      const config = yield* Schema.decodeUnknown(parquet.config)({ row_group_size: 6 }).pipe(Effect.orDie)
      const settings = { codec: yield* makeCodec(config), rowGroupSize: 6, rowGroupBytes: Number.POSITIVE_INFINITY }
      const pool = new PartBuffersPool()
      const first = yield* bytesOf(makePartEncoder(allTypesSchema, { ...settings, buffers: pool }), 4)
      const kept = pool.take()
      pool.give(kept)
      // A part with other batches and row groups, over buffers that hold the first part's bytes.
      const second = yield* bytesOf(makePartEncoder(allTypesSchema, { ...settings, buffers: pool }), 3)
      expect(pool.take()).toBe(kept)
      expect(second.equals(yield* bytesOf(makePartEncoder(allTypesSchema, settings), 3))).toBe(true)
      expect(first.equals(yield* bytesOf(makePartEncoder(allTypesSchema, settings), 4))).toBe(true)
      expect(yield* readBack([second])).toEqual(expected)
    })
  )

  it.effect("parts open at once each have their own buffers; one set is kept", () =>
    Effect.gen(function* () {
      const config = yield* Schema.decodeUnknown(parquet.config)({}).pipe(Effect.orDie)
      const settings = { codec: yield* makeCodec(config), rowGroupSize: 6, rowGroupBytes: Number.POSITIVE_INFINITY }
      const pool = new PartBuffersPool()
      const a = makePartEncoder(allTypesSchema, { ...settings, buffers: pool })
      const b = makePartEncoder(allTypesSchema, { ...settings, buffers: pool })
      const [bytesA, bytesB] = [yield* bytesOf(a, 5), yield* bytesOf(b, 5)]
      expect(bytesA.equals(bytesB)).toBe(true)
      // Two sets given back: the first is kept, the second left to the collector.
      const [first, second] = [pool.take(), pool.take()]
      pool.give(first)
      pool.give(second)
      expect(pool.take()).toBe(first)
      const next = pool.take()
      // Identity, not `not.toBe`: a passing `not.toBe` deep-compares the two sets of MiB-sized buffers (seconds).
      expect(next === second).toBe(false)
      expect(next === first).toBe(false)
    })
  )
})

describe("parquet encoder releasing batches (the encoder thread's way)", () => {
  // Every typed array's buffer in a batch's columns.
  const buffersOf = (value: unknown, into = new Set<ArrayBuffer>()): Set<ArrayBuffer> => {
    if (ArrayBuffer.isView(value)) into.add(value.buffer as ArrayBuffer)
    else if (typeof value === "object" && value !== null) for (const inner of Object.values(value)) buffersOf(inner, into)
    return into
  }

  it.effect("hands each batch over once, after the row group with its last rows; its buffers freed then, the file reads back exactly", () =>
    Effect.gen(function* () {
      const config = yield* Schema.decodeUnknown(parquet.config)({ row_group_size: 6 }).pipe(Effect.orDie)
      const codec = yield* makeCodec(config)
      const released: Array<Batch> = []
      const encoder = makePartEncoder(allTypesSchema, {
        codec,
        rowGroupSize: 6,
        rowGroupBytes: Number.POSITIVE_INFINITY,
        release: (batch) => {
          released.push(batch)
          releaseBuffers(buffersOf(batch.columns))
        }
      })
      const batches: Array<Batch> = []
      const chunks: Array<Uint8Array> = []
      // Batches of 2, 3, 1, 5, 2, 3, 1, 3 rows in groups of 6: the 5-row batch spans two groups.
      for (const [from, to] of [[0, 2], [2, 5], [5, 6], [6, 11], [11, 13], [13, 16], [16, 17], [17, 20]] as const) {
        const slice = rows.slice(from, to)
        const batch = makeBatch(allTypesSchema, allTypesSchema.columns.map((_, c) => slice.map((row) => row[c]!)))
        batches.push(batch)
        chunks.push(...(yield* encoder.write(batch)))
        const written = Math.floor(to / 6) * 6
        // Exactly the batches whose last row is in a written group, in order.
        expect(released).toEqual(batches.filter((_, i) => [2, 5, 6, 11, 13, 16, 17, 20][i]! <= written))
      }
      chunks.push(...(yield* encoder.finish))
      expect(released).toEqual(batches)
      for (const batch of batches) for (const buffer of buffersOf(batch.columns)) expect(buffer.byteLength).toBe(0)
      expect(yield* readBack(chunks)).toEqual(expected)
    })
  )

  it.effect("hands the decimal words of each batch over with it, to be freed; the file still reads back exactly", () =>
    Effect.gen(function* () {
      const config = yield* Schema.decodeUnknown(parquet.config)({ row_group_size: 6 }).pipe(Effect.orDie)
      const codec = yield* makeCodec(config)
      const freed: Array<ArrayBuffer> = []
      let releasedBatches = 0
      const encoder = makePartEncoder(allTypesSchema, {
        codec,
        rowGroupSize: 6,
        rowGroupBytes: Number.POSITIVE_INFINITY,
        release: () => void releasedBatches++,
        releaseBuffers: (buffers) => {
          freed.push(...buffers)
          releaseBuffers(buffers)
        }
      })
      const chunks: Array<Uint8Array> = []
      // The 5-row batch spans two groups: its words are handed over once, with the group holding its last rows.
      for (const [from, to] of [[0, 2], [2, 5], [5, 6], [6, 11], [11, 13], [13, 16], [16, 17], [17, 20]] as const) {
        const slice = rows.slice(from, to)
        chunks.push(...(yield* encoder.write(makeBatch(allTypesSchema, allTypesSchema.columns.map((_, c) => slice.map((row) => row[c]!))))))
      }
      chunks.push(...(yield* encoder.finish))
      // One array of words per decimal column, lists of decimals included.
      const decimal = (type: LogicalType): boolean => type.kind === "decimal" || (type.kind === "list" && decimal(type.element))
      const decimals = allTypesSchema.columns.filter((column) => decimal(column.type)).length
      expect(decimals).toBeGreaterThan(0)
      expect(releasedBatches).toBe(8)
      expect(freed).toHaveLength(8 * decimals)
      expect(new Set(freed).size).toBe(freed.length)
      for (const buffer of freed) expect(buffer.byteLength).toBe(0)
      expect(yield* readBack(chunks)).toEqual(expected)
    })
  )
})
