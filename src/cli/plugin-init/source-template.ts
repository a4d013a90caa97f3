/** `rivet plugin init --kind source`: a source of generated rows and a test running it through Rivet's runtime. */
export const sourceSource = (type: string) => `import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { defineSource, makeBatch, SourceDriver, type BatchSchema, type SourceDriverShape } from "rivet-export/plugin"

/** The keys of \`source:\` besides \`type\`; descriptions show up in \`rivet schema\` and editor completion. */
export const Config = Schema.Struct({
  rows: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()).annotations({ description: "How many rows each export reads (default 1000)." }), {
    default: () => 1000
  })
})
export type Config = typeof Config.Type

const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }, { name: "label", type: { kind: "string" } }] }

export const makeDriver = (config: Config): SourceDriverShape => ({
  label: ${JSON.stringify(type)},
  displayUrl: \`${type}:\${config.rows}\`,
  check: Effect.void,
  // Batches of query.batchSize rows, produced as the runtime pulls them: a real source reads them from its store here.
  open: (query) =>
    Effect.succeed({
      schema,
      batches: Stream.range(0, Math.ceil(config.rows / query.batchSize) - 1).pipe(
        Stream.map((index) => {
          const start = index * query.batchSize
          const ids = Array.from({ length: Math.min(query.batchSize, config.rows - start) }, (_, i) => start + i)
          return makeBatch(schema, [ids.map(BigInt), ids.map((id) => \`\${query.exportName} \${id}\`)])
        })
      )
    })
})

export default defineSource({
  type: ${JSON.stringify(type)},
  apiVersion: 1,
  description: "Generated rows (id, label)",
  config: Config,
  make: (config) => Layer.succeed(SourceDriver, makeDriver(config))
})
`

// Rivet's runtime (runExports) keeps state in SQLite, an optional package: the test drives the source directly.
export const sourceTest = (type: string) => `import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { batchToRows, SourceDriver } from "rivet-export/plugin"
import { expect, it } from "vitest"
import plugin from "../src/index.js"

const query = { exportName: "items", base: { _tag: "Table", name: "items" } as const, batchSize: 1000, columnTypes: new Map() }

it("${type}: reads every row in batches of at most batchSize", async () => {
  const config = Effect.runSync(Schema.decodeUnknown(plugin.config)({ rows: 2500 }))
  const read = Effect.gen(function* () {
    const source = yield* SourceDriver
    yield* source.check
    const result = yield* source.open(query)
    return Chunk.toArray(yield* Stream.runCollect(result.batches))
  }).pipe(Effect.scoped, Effect.provide(plugin.make(config, { configDir: process.cwd(), env: {} })))
  const batches = await Effect.runPromise(read)
  expect(batches.map((batch) => batch.rowCount)).toEqual([1000, 1000, 500])
  const rows = batches.flatMap(batchToRows)
  expect(rows.map((row) => row["id"])).toEqual(Array.from({ length: 2500 }, (_, i) => BigInt(i)))
  expect(rows[0]).toEqual({ id: 0n, label: "items 0" })
})
`
