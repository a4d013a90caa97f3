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
import { defineSink, runExports, SinkDriver, type UploadHandle } from "rivet"

/** A sink plugin plus the Map it writes into. */
export const makeMapSink = () => {
  const objects = new Map<string, Uint8Array>()

  const upload = (key: string): UploadHandle => {
    const blocks: Array<Uint8Array> = []
    return {
      // Blocks may be retried, so writing block i twice must simply replace it.
      writeBlock: (index, bytes) => Effect.sync(() => void (blocks[index] = bytes.slice())),
      complete: (count) => Effect.sync(() => void objects.set(key, Buffer.concat(blocks.slice(0, count)))),
      abort: Effect.sync(() => void blocks.splice(0))
    }
  }

  const plugin = defineSink({
    type: "map",
    description: "Objects kept in a JavaScript Map (example)",
    // The destination block's keys besides `type`; Rivet rejects any other key with a did-you-mean.
    config: Schema.Struct({ prefix: Schema.optionalWith(Schema.String, { default: () => "" }) }),
    make: (config) =>
      Layer.succeed(SinkDriver, {
        label: "Map",
        uri: (key) => `map:${config.prefix}${key ?? ""}`,
        capabilities: { markers: true, blockSize: 1024 * 1024, concurrency: 1 },
        check: Effect.void,
        put: (key, bytes) => Effect.sync(() => void objects.set(`${config.prefix}${key}`, bytes.slice())),
        begin: (key) => Effect.sync(() => upload(`${config.prefix}${key}`))
      })
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
