import { randomBytes } from "node:crypto"
import * as zlib from "node:zlib"
import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Batch, type BatchSchema, makeBatch } from "../../src/core/batch.js"
import type { FormatDriverShape } from "../../src/core/plugin.js"
import { encodeParts, type PartCap, type PartPiece } from "../../src/engine/encode-parts.js"
import { makeCsvDriver } from "../../src/plugins/formats/csv/index.js"
import { makeNdjsonDriver } from "../../src/plugins/formats/ndjson/index.js"
import { makeParquetDriver } from "../../src/plugins/formats/parquet/driver.js"

// The cap in process, format by format (the encoder thread's path is the CLI's: test/e2e/size-cap.test.ts): parts
// at most the cap, every row once and in order, a lone oversized row reported; and the estimate-based cap the
// runtime keeps for a format without `writeCapped`.

const schema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "body", type: { kind: "string" } },
    { name: "amount", type: { kind: "float64" } }
  ]
}
const CAP = 64 * 1024

/** Base64 of random bytes: about 120 KB even compressed, larger than the cap in every format. */
const BIG = randomBytes(120_000).toString("base64")

/** `batches` batches of `size` rows; row `big` (if any) carries `BIG`. Bodies vary in length and content. */
const batchesOf = (batches: number, size: number, big?: number): Array<Batch> =>
  Array.from({ length: batches }, (_, b) => {
    const ids = Array.from({ length: size }, (_, i) => b * size + i)
    return makeBatch(schema, [
      ids.map(BigInt),
      ids.map((id) => (id === big ? BIG : `${id.toString(36)}-${"abcdefghij".repeat(1 + (id % 7))}-${(id * 2654435761) % 1000003}`)),
      ids.map((id) => id / 3)
    ])
  })

interface Part {
  readonly bytes: Uint8Array
  readonly rows: number
}

const partsOf = (pieces: ReadonlyArray<PartPiece>): Array<Part> => {
  const parts: Array<Part> = []
  const open = new Map<number, Array<Uint8Array>>()
  for (const piece of pieces) {
    if (piece._tag === "bytes") open.set(piece.part, [...(open.get(piece.part) ?? []), piece.bytes])
    else parts[piece.part] = { bytes: Buffer.concat(open.get(piece.part) ?? []), rows: piece.rows }
  }
  return parts
}

const run = (format: FormatDriverShape, batches: ReadonlyArray<Batch>, cap: PartCap | undefined) =>
  Effect.map(Stream.runCollect(encodeParts(Stream.fromIterable(batches), format, schema, cap)), (pieces) =>
    partsOf(Chunk.toReadonlyArray(pieces))
  )

const capOf = (reported: Array<string>): PartCap => ({
  maxBytes: CAP,
  rowNamer: (batch) => (index, unitRow) => `row ${unitRow} (batch row ${index} of ${batch.rowCount})`,
  oversized: (row) => Effect.sync(() => void reported.push(`${row.row}: ${row.bytes}`))
})

/** The text of CSV parts without their headers, and of NDJSON parts, gunzipped when `gzip`. */
const bodies = (parts: ReadonlyArray<Part>, header: boolean, gzip: boolean) =>
  parts
    .map((part) => (gzip ? zlib.gunzipSync(part.bytes) : Buffer.from(part.bytes)).toString("utf8"))
    .map((text) => (header ? text.slice(text.indexOf("\n") + 1) : text))
    .join("")

const textFormats = [
  ["csv", Effect.scoped(makeCsvDriver({ compression: "none" })), true, false],
  ["csv gzip", Effect.scoped(makeCsvDriver({ compression: "gzip" })), true, true],
  ["ndjson", Effect.scoped(makeNdjsonDriver({ compression: "none" })), false, false],
  ["ndjson gzip", Effect.scoped(makeNdjsonDriver({ compression: "gzip" })), false, true]
] as const

describe("parts under max_file_size", () => {
  for (const [label, driver, header, gzip] of textFormats) {
    it.effect(`${label}: every part at most the cap, the same rows in the same order as without a cap`, () =>
      Effect.gen(function* () {
        const format = yield* driver
        const batches = batchesOf(6, 4000)
        const reported: Array<string> = []
        const capped = yield* run(format, batches, capOf(reported))
        const whole = yield* run(format, batchesOf(6, 4000), undefined)
        expect(capped.length).toBeGreaterThan(gzip ? 1 : 10)
        for (const part of capped) expect(part.bytes.length).toBeLessThanOrEqual(CAP)
        expect(capped.reduce((sum, part) => sum + part.rows, 0)).toBe(24_000)
        expect(bodies(capped, header, gzip)).toBe(bodies(whole, header, gzip))
        // Parts end near the cap, not far below it (gzip: the flushes find the room left); the last may be short.
        for (const part of capped.slice(0, -1)) expect(part.bytes.length).toBeGreaterThan(CAP * 0.9)
        expect(reported).toEqual([])
      })
    )
  }

  it.effect("parquet: every part at most the cap, row groups of a part within it, all rows", () =>
    Effect.gen(function* () {
      const format = yield* Effect.scoped(makeParquetDriver({ compression: "zstd" }))
      const capped = yield* run(format, batchesOf(6, 4000), capOf([]))
      expect(capped.length).toBeGreaterThan(3)
      for (const part of capped) {
        expect(part.bytes.length).toBeLessThanOrEqual(CAP)
        expect(Buffer.from(part.bytes.subarray(0, 4)).toString()).toBe("PAR1")
        expect(Buffer.from(part.bytes.subarray(-4)).toString()).toBe("PAR1")
      }
      expect(capped.reduce((sum, part) => sum + part.rows, 0)).toBe(24_000)
      for (const part of capped.slice(0, -1)) expect(part.bytes.length).toBeGreaterThan(CAP * 0.6)
    })
  )

  for (const [label, driver] of [
    ["csv", Effect.scoped(makeCsvDriver({ compression: "none" }))],
    ["ndjson gzip", Effect.scoped(makeNdjsonDriver({ compression: "gzip" }))],
    ["parquet", Effect.scoped(makeParquetDriver({ compression: "zstd" }))]
  ] as const) {
    it.effect(`${label}: a row larger than the cap is written alone and reported; the parts around it are capped`, () =>
      Effect.gen(function* () {
        const format = yield* driver
        const reported: Array<string> = []
        const parts = yield* run(format, batchesOf(3, 2000, 2500), capOf(reported))
        const over = parts.filter((part) => part.bytes.length > CAP)
        expect(over.map((part) => part.rows)).toEqual([1])
        expect(reported).toHaveLength(1)
        expect(reported[0]).toMatch(/^row 2501 \(batch row 500 of 2000\): \d+$/)
        expect(parts.reduce((sum, part) => sum + part.rows, 0)).toBe(6000)
      })
    )
  }

  it.effect("a format without writeCapped: slices from the bytes per row seen keep parts of even rows within the cap", () =>
    Effect.gen(function* () {
      const csv = yield* Effect.scoped(makeCsvDriver({ compression: "none" }))
      // A plugin's format: write and finish only.
      const plain: FormatDriverShape = {
        ...csv,
        open: (s, info) => Effect.map(csv.open(s, info), (encoder) => ({ write: encoder.write, finish: encoder.finish }))
      }
      const even = Array.from({ length: 5 }, (_, b) =>
        makeBatch(schema, [
          Array.from({ length: 4000 }, (_, i) => BigInt(100_000 + b * 4000 + i)),
          Array.from({ length: 4000 }, () => "y".repeat(40)),
          Array.from({ length: 4000 }, () => 0.5)
        ])
      )
      const parts = yield* run(plain, even, capOf([]))
      expect(parts.length).toBeGreaterThan(5)
      for (const part of parts) expect(part.bytes.length).toBeLessThanOrEqual(CAP)
      expect(parts.reduce((sum, part) => sum + part.rows, 0)).toBe(20_000)
    })
  )
})
