/**
 * Decode-only benchmark of the PostgreSQL binary COPY reader: the CopyData payloads of
 * `COPY (select * from TABLE order by 1 limit ROWS) TO STDOUT (FORMAT binary)` are captured once in memory, as postgres.js
 * hands them over (one row per payload), then decoded through the real BinaryCopyDecoder and field readers
 * (the plans come from the server's description and catalog, as an export makes them) `REPEAT` times.
 *
 *   npx esbuild bench/binary-decode.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=bench/.work/binary-decode.mjs
 *   node bench/.work/binary-decode.mjs [table=bench_2m] [rows=500000] [repeat=5] [batch=10000] [cut]
 *
 * With `cut` (bytes), the stream is fed in pieces of that size instead (rows split across pieces, several rows in
 * one): the decoded columns must hash the same.
 * Prints the CPU time of each pass (decoding alone: the capture is excluded) and the sha256 of every decoded
 * column buffer of the last pass, which must not change with the decoder's code.
 * RIVET_BENCH_PG_URL as for bench/run.sh (default postgres://postgres@127.0.0.1:5432/test).
 */
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import postgres from "postgres"
import type { ColumnData } from "../src/core/columns/data.js"
import { BinaryCopyDecoder } from "../src/plugins/sources/postgres/binary-copy.js"
import { fieldReader } from "../src/plugins/sources/postgres/binary-fields.js"
import { startCopyOut } from "../src/plugins/sources/postgres/copy-stream.js"
import { planStatement } from "../src/plugins/sources/postgres/result.js"
import { openSession } from "../src/plugins/sources/postgres/session.js"
import { copyStatement } from "../src/plugins/sources/postgres/statement.js"

const [tableArg, rowsArg, repeatArg, batchArg, cutArg] = process.argv.slice(2)
const table = tableArg ?? "bench_2m"
const rows = Number(rowsArg ?? 500_000)
const repeat = Number(repeatArg ?? 5)
const batchRows = Number(batchArg ?? 10_000)
const url = process.env["RIVET_BENCH_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(table)) throw new Error(`not a plain table name: ${table}`)

// As driver.ts opens the pool: the catalog queries expect values as the server's text.
const RAW_TEXT = { to: 25, from: [16, 17, 21, 23, 26, 114, 700, 701, 1082, 1114, 1184, 3802], serialize: String }
const pool = postgres(url, {
  max: 1,
  fetch_types: false,
  prepare: false,
  onnotice: () => {},
  types: { rivetText: RAW_TEXT as unknown as postgres.PostgresType<string> }
})
const context = { displayUrl: url, scrub: (text: string) => text, exportName: "bench" }
const settings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }
// Ordered: a plain LIMIT may start anywhere in the table (synchronized scans), and the hash must be comparable.
const select = `select * from ${table} order by 1 limit ${rows}`

const { plans, chunks: payloads } = await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const sql = yield* openSession(pool, settings, context)
      const query = { exportName: "bench", base: { _tag: "Query", sql: select } as const, batchSize: batchRows, columnTypes: new Map() }
      const { plans } = yield* planStatement(sql, query, { text: select, params: [] }, context)
      const readers = plans.map(fieldReader)
      const chunks: Array<Uint8Array> = []
      const copy = startCopyOut(sql, copyStatement(select, readers.map((reader) => reader.rendered)), (bytes, start, end) => chunks.push(bytes.slice(start, end)))
      yield* Effect.promise(() => copy.done)
      return { plans, chunks }
    })
  )
)
await pool.end({ timeout: 0 })
const recut = (pieces: ReadonlyArray<Uint8Array>, size: number): Array<Uint8Array> => {
  const all = Buffer.concat(pieces)
  const out: Array<Uint8Array> = []
  for (let at = 0; at < all.byteLength; at += size) out.push(all.subarray(at, at + size))
  return out
}
const chunks = cutArg === undefined ? payloads : recut(payloads, Number(cutArg))
const bytes = chunks.reduce((sum, chunk) => sum + chunk.byteLength, 0)
console.log(`${table}: ${rows} rows, ${plans.length} columns, ${chunks.length} pieces, ${(bytes / 1e6).toFixed(1)} MB`)

const hashColumn = (hash: ReturnType<typeof createHash>, column: ColumnData): void => {
  hash.update(`${column.layout}:${column.length}:${column.nullCount};`)
  if (column.validity !== undefined) hash.update(column.validity)
  switch (column.layout) {
    case "binary":
      hash.update(new Uint8Array(column.offsets.buffer, column.offsets.byteOffset, column.offsets.byteLength))
      hash.update(column.data)
      return
    case "fixed":
      hash.update(column.data)
      return
    case "list":
      hash.update(new Uint8Array(column.offsets.buffer, column.offsets.byteOffset, column.offsets.byteLength))
      hashColumn(hash, column.child)
      return
    default:
      hash.update(new Uint8Array(column.values.buffer, column.values.byteOffset, column.values.byteLength))
  }
}

const pass = (hash: ReturnType<typeof createHash> | undefined): number => {
  const decoder = new BinaryCopyDecoder({
    sinks: (capacity) => plans.map((plan) => fieldReader(plan).make(capacity)),
    batchRows,
    onBatch: (columns) => {
      if (hash !== undefined) for (const column of columns) hashColumn(hash, column)
    }
  })
  for (const chunk of chunks) decoder.push(chunk)
  const last = decoder.end()
  if (hash !== undefined) for (const column of last) hashColumn(hash, column)
  return decoder.pendingRows
}

const times: Array<number> = []
for (let i = 0; i < repeat; i++) {
  const start = process.cpuUsage()
  pass(undefined)
  const used = process.cpuUsage(start)
  times.push((used.user + used.system) / 1e6)
}
const hash = createHash("sha256")
pass(hash)
const sorted = [...times].sort((a, b) => a - b)
console.log(`CPU s per pass: ${times.map((t) => t.toFixed(3)).join(" ")}  min ${sorted[0]!.toFixed(3)} median ${sorted[sorted.length >> 1]!.toFixed(3)}`)
console.log(`sha256 of the decoded columns: ${hash.digest("hex")}`)
