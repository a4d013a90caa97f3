/**
 * Encode-only benchmark of the NDJSON and CSV formats (from batches): synthetic batches with bench_2m's 20
 * columns and values (bench/make-table.sql's formulas) go through the real PartEncoder; the output is hashed.
 *
 *   npx esbuild bench/text-encode.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=bench/.work/text-encode.mjs
 *   node bench/.work/text-encode.mjs [format=ndjson|csv] [rows=1000000] [floats=table|random] [each]
 *
 * `floats=random` replaces the two float columns' values by random bits (few repeats, subnormals included), to
 * see the cost of values that no cache holds. The batches (200 000 rows, 10 000 a batch) are made once and encoded
 * again until `rows` are done; generation and hashing are excluded from the times. Prints the encode CPU time,
 * ns per value and the sha256 of the output (the same on any build that writes the same bytes). `each` then also
 * encodes every column alone (a one-column part) and prints its ns per value, to see where the time goes.
 */
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import { csvPartOpener } from "../src/plugins/formats/csv/encoder.js"
import { ndjsonPartOpener } from "../src/plugins/formats/ndjson/encoder.js"
import { type Batch, type BatchSchema, makeBatch, type Value } from "../src/core/batch.js"
import { COUNTRIES, STATUSES, wideSchema } from "./wide-shape.js"

const [formatArg, rowsArg, floatsArg, eachArg] = process.argv.slice(2)
const format = formatArg ?? "ndjson"
const totalRows = Number(rowsArg ?? 1_000_000)
const randomFloats = floatsArg === "random"
const BATCH = 10_000
const DISTINCT = 200_000

const schema = wideSchema
const columns = schema.columns
const SECOND = 1_000_000n
const CREATED = BigInt(Date.UTC(2020, 0, 1)) * 1000n
const UPDATED = BigInt(Date.UTC(2021, 5, 1, 12)) * 1000n
const DAY_1950 = -7305
const bits = new Uint32Array(2)
const double = new Float64Array(bits.buffer)
const single = new Float32Array(bits.buffer)
// A fixed xorshift sequence, so that every build encodes the same values.
let seed = 0x2545f491
const random32 = () => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return seed >>> 0
}
const randomDouble = () => {
  bits[0] = random32()
  bits[1] = random32()
  return Number.isFinite(double[0]!) ? double[0]! : 0.5
}
const randomSingle = () => {
  bits[0] = random32()
  return Number.isFinite(single[0]!) ? single[0]! : 0.5
}
const decimal = (units: bigint, scale: number) => {
  const text = units.toString().padStart(scale + 1, "0")
  return `${text.slice(0, -scale)}.${text.slice(-scale)}`
}

const valueOf = (column: number, n: number): Value => {
  const i = BigInt(n)
  switch (column) {
    case 0: return i
    case 1: return Number((i * 7919n) % 100_000n)
    case 2: return n % 11 === 0 ? null : n % 500
    case 3: return decimal((i * 37n) % 10_000_000n, 2)
    case 4: return decimal(((i * 7n) % 1_000_000_007n), 6)
    case 5: return randomFloats ? randomDouble() : (n % 1000) / 7
    case 6: return n % 13 === 0 ? null : randomFloats ? randomSingle() : Math.fround((n % 100) / 3)
    case 7: return `customer ${n}`
    case 8: return `user${n}@example.com`
    case 9: return COUNTRIES[n % 8]!
    case 10: return STATUSES[n % 5]!
    case 11: return n % 3 !== 0
    case 12: return CREATED + i * SECOND + (i % 1_000_000n)
    case 13: return UPDATED + i * 17n * SECOND
    case 14: return n % 9 === 0 ? null : DAY_1950 + (n % 20_000)
    case 15: return BigInt(n % 86_400) * SECOND
    case 16: {
      const h = createHash("md5").update(String(n)).digest("hex")
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
    }
    case 17: return `{"id": ${n}, "big": ${12345678901234567890n + i}, "kind": "event"}`
    case 18: return [`tag${n % 10}`, `tag${n % 7}`]
    default: return n % 5 === 0 ? null : `note with, comma and "quotes" #${n}`
  }
}

const makeRows = (start: number, count: number): Batch =>
  makeBatch(schema, columns.map((_, c) => Array.from({ length: count }, (_, r) => valueOf(c, start + r))))

const encodeAll = Effect.fn(function* (schema: BatchSchema, batches: ReadonlyArray<Batch>) {
  const encoder = yield* (format === "csv" ? csvPartOpener(schema) : ndjsonPartOpener(schema))
  const hash = createHash("sha256")
  let bytes = 0
  let cpuUs = 0
  for (let done = 0, b = 0; done < totalRows; done += BATCH, b = (b + 1) % batches.length) {
    const cpu = process.cpuUsage()
    const chunks = yield* encoder.write(batches[b]!)
    const used = process.cpuUsage(cpu)
    cpuUs += used.user + used.system
    for (const chunk of chunks) {
      bytes += chunk.length
      hash.update(chunk)
    }
  }
  for (const chunk of yield* encoder.finish) hash.update(chunk)
  return { seconds: cpuUs / 1e6, bytes, sha256: hash.digest("hex").slice(0, 16) }
})

const program = Effect.gen(function* () {
  const batches: Array<Batch> = []
  for (let start = 1; start <= Math.min(DISTINCT, totalRows); start += BATCH) batches.push(makeRows(start, BATCH))
  const { seconds, bytes, sha256 } = yield* encodeAll(schema, batches)
  console.log(
    `${format} rows=${totalRows} floats=${randomFloats ? "random" : "table"} encode cpu=${seconds.toFixed(2)}s ` +
      `(${((seconds * 1e9) / (totalRows * columns.length)).toFixed(0)} ns/value) ` +
      `output=${(bytes / 2 ** 20).toFixed(1)}MiB sha256=${sha256}`
  )
  if (eachArg !== "each") return
  for (let c = 0; c < columns.length; c++) {
    const one: BatchSchema = { columns: [columns[c]!] }
    const alone = yield* encodeAll(one, batches.map((batch) => ({ schema: one, columns: [batch.columns[c]!], rowCount: batch.rowCount })))
    console.log(`  ${columns[c]!.name.padEnd(12)} ${((alone.seconds * 1e9) / totalRows).toFixed(0).padStart(4)} ns/value  sha256=${alone.sha256}`)
  }
})

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
