import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import postgres from "postgres"
import { type Batch, batchToRows, type LogicalType } from "../../../../src/core/batch.js"
import { SourceDriver, type SourceQuery } from "../../../../src/core/plugin.js"
import postgresSource, { type PostgresConfig } from "../../../../src/plugins/sources/postgres/index.js"
import { testPgUrl } from "../../../support/pg.js"

/** A plain postgres.js client for setting up fixtures. */
export const adminSql = (): postgres.Sql => postgres(testPgUrl(), { max: 2, onnotice: () => {} })

/** The source driver layer for a config block (decoded like the runtime does). */
export const sourceLayer = (
  input: typeof PostgresConfig.Encoded,
  env: Record<string, string | undefined> = {}
): Layer.Layer<SourceDriver, unknown> =>
  Layer.unwrapEffect(
    Schema.decodeUnknown(postgresSource.config, { onExcessProperty: "error" })(input).pipe(
      Effect.map((config) => postgresSource.make(config, { configDir: process.cwd(), env, exportName: undefined }))
    )
  )

/** The driver on the test database. */
export const testSource = (): Layer.Layer<SourceDriver, unknown> => sourceLayer({ url_env: "PG" }, { PG: testPgUrl() })

export const query = (
  sql: string,
  options: { batchSize?: number; columnTypes?: Record<string, LogicalType> } = {}
): SourceQuery => ({
  exportName: "test",
  base: { _tag: "Query", sql },
  batchSize: options.batchSize ?? 1000,
  columnTypes: new Map(Object.entries(options.columnTypes ?? {}))
})

/** Opens the query, reads every batch, closes. */
export const readAll = (q: SourceQuery) =>
  Effect.scoped(
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const result = yield* driver.open(q)
      const batches = Chunk.toReadonlyArray(yield* Stream.runCollect(result.batches))
      return { schema: result.schema, batches }
    })
  )

export const rowsOf = (batches: ReadonlyArray<Batch>) => batches.flatMap(batchToRows)

/** The error context and transaction settings of a session opened straight on a pool (`openSession`). */
export const sessionContext = (exportName: string) => ({
  displayUrl: "postgres://postgres@127.0.0.1/test",
  scrub: (text: string) => text,
  exportName
})
export const plainSettings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }
