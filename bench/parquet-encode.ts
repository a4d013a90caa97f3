/**
 * Encode-only benchmark of the Parquet format: synthetic batches of 20 mixed columns (the shape of the
 * 2M-row benchmark table) go through the real PartEncoder; bytes are counted and dropped.
 *
 *   npx esbuild bench/parquet-encode.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=bench/.work/parquet-encode.mjs
 *   node bench/.work/parquet-encode.mjs [rows=1000000] [row_group_size=default] [compression=zstd] [batch=10000]
 *     [row_group_bytes=default]
 *
 * BENCH_OUT=file.parquet also writes the file (to check it with another reader).
 * Prints rows/s of encoding alone (generation excluded; wall and CPU time, as CPU time is steadier on a
 * shared machine), output size, row groups and the process's peak RSS (`maxRSS`).
 */
import * as Effect from "effect/Effect"
import { appendFileSync, writeFileSync } from "node:fs"
import { type Batch, type BatchSchema, type LogicalType, makeBatch, type Value } from "../src/core/batch.js"
import * as Schema from "effect/Schema"
import { makeCodec } from "../src/plugins/formats/parquet/compressors.js"
import { ParquetConfig, rowGroupLimits } from "../src/plugins/formats/parquet/config.js"
import { makePartEncoder } from "../src/plugins/formats/parquet/encoder.js"

const [rowsArg, groupArg, compressionArg, batchArg, bytesArg] = process.argv.slice(2)
const given = (arg: string | undefined) => (arg === undefined || arg === "default" ? undefined : Number(arg))
const totalRows = Number(rowsArg ?? 1_000_000)
const batchSize = Number(batchArg ?? 10_000)

const columns: ReadonlyArray<{ name: string; type: LogicalType }> = [
  { name: "id", type: { kind: "int64" } },
  { name: "customer_id", type: { kind: "int32" } },
  { name: "quantity", type: { kind: "int16" } },
  { name: "amount", type: { kind: "decimal", precision: 12, scale: 2 } },
  { name: "big_amount", type: { kind: "decimal", precision: 38, scale: 10 } },
  { name: "score", type: { kind: "float64" } },
  { name: "ratio", type: { kind: "float32" } },
  { name: "name", type: { kind: "string" } },
  { name: "category", type: { kind: "string" } },
  { name: "note", type: { kind: "string" } },
  { name: "active", type: { kind: "bool" } },
  { name: "day", type: { kind: "date" } },
  { name: "at_time", type: { kind: "time" } },
  { name: "created_local", type: { kind: "timestamp" } },
  { name: "created_at", type: { kind: "timestamptz" } },
  { name: "uid", type: { kind: "uuid" } },
  { name: "payload", type: { kind: "json" } },
  { name: "blob", type: { kind: "bytes" } },
  { name: "wait", type: { kind: "interval" } },
  { name: "tags", type: { kind: "list", element: { kind: "int32" } } }
]
const schema: BatchSchema = { columns }

const hex = (n: number, width: number) => n.toString(16).padStart(width, "0").slice(-width)
const CATEGORIES = ["books", "garden", "toys", "food", "tools", "music", "sports", "home"]

const valueOf = (column: number, i: number): Value => {
  if (column !== 0 && i % 7 === column % 7) return null
  switch (column) {
    case 0: return BigInt(i)
    case 1: return (i * 7919) % 100_000
    case 2: return i % 1000
    case 3: return `${Math.floor(i * 13.7) % 10_000_000}.${String(i % 100).padStart(2, "0")}`
    case 4: return `${i * 1_000_003}.${String(i % 10_000_000_000).padStart(10, "0")}`
    case 5: return i * 0.37
    case 6: return (i % 1000) / 7
    case 7: return `customer ${i} ${hex(i * 2654435761, 8)}`
    case 8: return CATEGORIES[i % CATEGORIES.length]!
    case 9: return `note for row ${i}: lorem ipsum dolor sit amet, consectetur ${i % 97}`
    case 10: return i % 3 === 0
    case 11: return 18_000 + (i % 3650)
    case 12: return BigInt(i % 86_400) * 1_000_000n + 123_456n
    case 13: return 1_700_000_000_000_000n + BigInt(i) * 1_000_123n
    case 14: return 1_700_000_000_000_000n + BigInt(i) * 1_000_007n
    case 15: return `${hex(i, 8)}-${hex(i >>> 3, 4)}-4${hex(i, 3)}-8${hex(i * 31, 3)}-${hex(i * 2654435761, 12)}`
    case 16: return `{"id": ${i}, "kind": "event", "value": ${i * 3}, "flags": [1, 2, 3], "big": 12345678901234567890}`
    case 17: return Uint8Array.from({ length: 16 }, (_, b) => (i + b) & 0xff)
    case 18: return `P${i % 12}M${i % 28}DT${i % 24}H`
    default: return i % 5 === 0 ? [] : [i % 100, null, i % 1000]
  }
}

const makeRows = (start: number, count: number): Batch =>
  makeBatch(schema, columns.map((_, c) => Array.from({ length: count }, (_, r) => valueOf(c, start + r))))

const program = Effect.gen(function* () {
  const rowGroupSize = given(groupArg)
  const config = yield* Schema.decodeUnknown(ParquetConfig)({
    compression: compressionArg ?? "zstd",
    ...(rowGroupSize === undefined ? {} : { row_group_size: rowGroupSize })
  })
  const limits = rowGroupLimits(config)
  const rowGroupBytes = given(bytesArg) ?? limits.bytes
  const encoder = makePartEncoder(schema, {
    codec: yield* makeCodec(config),
    rowGroupSize: limits.rows,
    rowGroupBytes
  })
  const out = process.env["BENCH_OUT"]
  const keep = (chunks: ReadonlyArray<Uint8Array>) => {
    if (out !== undefined) for (const chunk of chunks) appendFileSync(out, chunk)
    return chunks
  }
  if (out !== undefined) writeFileSync(out, new Uint8Array())
  let bytes = 0
  let groups = 1
  let encodeNs = 0n
  let encodeCpuUs = 0
  for (let start = 0; start < totalRows; start += batchSize) {
    const batch = makeRows(start, Math.min(batchSize, totalRows - start))
    if (process.env["BENCH_GENERATE_ONLY"]) continue
    const began = process.hrtime.bigint()
    const cpu = process.cpuUsage()
    const chunks = keep(yield* encoder.write(batch))
    if (chunks.reduce((sum, chunk) => sum + chunk.length, 0) > 4) groups++
    for (const chunk of chunks) bytes += chunk.length
    encodeNs += process.hrtime.bigint() - began
    const used = process.cpuUsage(cpu)
    encodeCpuUs += used.user + used.system
    yield* Effect.yieldNow()
  }
  const began = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  for (const chunk of keep(yield* encoder.finish)) bytes += chunk.length
  encodeNs += process.hrtime.bigint() - began
  const used = process.cpuUsage(cpu)
  encodeCpuUs += used.user + used.system
  const seconds = Number(encodeNs) / 1e9
  const cpuSeconds = encodeCpuUs / 1e6
  const peak = process.resourceUsage().maxRSS / 1024
  console.log(
    `rows=${totalRows} row_group_rows=${limits.rows} row_group_bytes=${rowGroupBytes} ` +
      `compression=${config.compression} ` +
      `encode wall=${seconds.toFixed(2)}s (${Math.round(totalRows / seconds)} rows/s) ` +
      `cpu=${cpuSeconds.toFixed(2)}s (${Math.round(totalRows / cpuSeconds)} rows/cpu-s) ` +
      `output=${(bytes / 2 ** 20).toFixed(1)}MiB row_groups≈${groups} peak_rss=${peak.toFixed(0)}MiB`
  )
})

Effect.runPromise(program).catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
