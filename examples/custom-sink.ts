/**
 * A destination written in a few lines of your own code: this sink keeps every object in a JavaScript Map.
 * It is passed to `runExports` through the `plugins` option — no package, no registration — and the config names
 * it by its `type`, like a built-in. Rivet still does the rest: batching, encoding, part naming, hashing,
 * the manifest and `_SUCCESS`, aborting on failure.
 *
 *   npm run build && DATABASE_URL=postgres://… npx tsx examples/custom-sink.ts
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { defineSink, runExports, Sink, SinkDriver } from "rivet-export"

/** A sink plugin plus the Map it writes into. */
export const makeMapSink = () => {
  const objects = new Map<string, Uint8Array>()

  const plugin = defineSink({
    type: "map",
    description: "Objects kept in a JavaScript Map (example)",
    // The destination block's keys besides `type`; Rivet rejects any other key with a did-you-mean.
    config: Schema.Struct({ prefix: Schema.optionalWith(Schema.String, { default: () => "" }) }),
    make: (config) =>
      Layer.succeed(
        SinkDriver,
        // Only `put`: Sink.make keeps the blocks of a large object in memory and puts them whole on complete.
        Sink.make({
          spanPrefix: "MapSink",
          label: "Map",
          uri: (key) => `map:${config.prefix}${key ?? ""}`,
          capabilities: { markers: true, blockSize: 1024 * 1024, concurrency: 1 },
          usageError: Sink.usageErrors("map"),
          probe: false,
          put: (key, bytes) => Effect.sync(() => void objects.set(`${config.prefix}${key}`, bytes.slice()))
        })
      )
  })
  return { plugin, objects }
}

/** Exports `table` as NDJSON into a Map under `exports/`; the run state lives in `workDir`. */
export const exportToMap = async (databaseUrl: string, workDir: string, table = "orders") => {
  const sink = makeMapSink()
  const [result] = await runExports(
    {
      source: { type: "postgres", url: databaseUrl },
      exports: [{ name: "orders", table, format: "ndjson", destination: { type: "map", prefix: "exports/" } }]
    },
    { configDir: workDir, plugins: [sink.plugin] }
  )
  return { result: result!, objects: sink.objects }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { objects } = await exportToMap(process.env["DATABASE_URL"] ?? "postgres://localhost/shop", ".")
  for (const [key, bytes] of objects) console.log(`${key}  ${bytes.length} bytes`)
}
