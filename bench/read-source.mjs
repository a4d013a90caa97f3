/* global process, performance, console */
// Reads a table through the postgres source to the end and discards the batches: the cost of reading alone.
// Usage: node bench/read-source.mjs [dist dir] [table]   (PostgreSQL at RIVET_BENCH_PG_URL, default 127.0.0.1:5432/test)
// e.g. /usr/bin/time -v node bench/read-source.mjs dist bench_2m   — compare with psql \copy of the same table.
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

const [dist = "dist", table = "bench_2m"] = process.argv.slice(2)
const url = process.env.RIVET_BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test"
const load = (file) => import(pathToFileURL(path.resolve(dist, file)).href)
const { default: source } = await load("sources/postgres/index.js")
const { SourceDriver } = await load("core/plugin.js")
const config = await Effect.runPromise(Schema.decodeUnknown(source.config)({ url, statement_timeout_s: 0 }))
const started = performance.now()
const seconds = () => ((performance.now() - started) / 1000).toFixed(2)
await Effect.runPromise(
  Effect.scoped(
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const result = yield* driver.open({ exportName: "bench", sql: `SELECT * FROM ${table}`, batchSize: 10000, columnTypes: new Map() })
      const rows = yield* Stream.runFold(result.batches, 0, (n, batch) => n + batch.rowCount)
      // Before the source closes its pool (which may wait for its connections).
      console.error(`${rows} rows read in ${seconds()} s`)
    }).pipe(Effect.provide(source.make(config, { configDir: process.cwd(), env: {}, exportName: "bench" })))
  )
)
