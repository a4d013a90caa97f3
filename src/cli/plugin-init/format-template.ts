/** `rivet plugin init --kind format`: a JSON Lines format and a test running it through Rivet's runtime. */
export const formatSource = (type: string) => `import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { batchToRows, defineFormat, FormatDriver, type FormatDriverShape, type PartEncoder } from "rivet-export/plugin"

/** \`format: ${type}\` takes no keys of its own (an empty Struct: Rivet rejects any key it does not know). */
export const Config = Schema.Struct({})

const encoder = new TextEncoder()
// JSON has no 64-bit integers or bytes: int64 values are written as strings, binary values as base64.
const jsonValue = (_key: string, value: unknown) =>
  typeof value === "bigint" ? value.toString() : value instanceof Uint8Array ? Buffer.from(value).toString("base64") : value

export const driver: FormatDriverShape = {
  extension: ${JSON.stringify(type)},
  contentType: "application/x-ndjson",
  compression: "none",
  validate: () => Effect.void,
  open: () =>
    Effect.succeed({
      write: (batch) =>
        Effect.sync(() => [encoder.encode(batchToRows(batch).map((row) => \`\${JSON.stringify(row, jsonValue)}\\n\`).join(""))]),
      finish: Effect.succeed([])
    } satisfies PartEncoder)
}

export default defineFormat({
  type: ${JSON.stringify(type)},
  apiVersion: 1,
  description: "One JSON object per row and line",
  config: Config,
  make: () => Layer.succeed(FormatDriver, driver)
})
`

// Rivet's runtime (runExports) keeps state in SQLite, an optional package: the test drives the format directly.
export const formatTest = (type: string) => `import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { FormatDriver, makeBatch, type BatchSchema } from "rivet-export/plugin"
import { expect, it } from "vitest"
import plugin from "../src/index.js"

const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }, { name: "name", type: { kind: "string" } }] }
const rows = Array.from({ length: 1200 }, (_, i) => ({ id: BigInt(i), name: i % 5 === 0 ? null : \`row \${i}\` }))

/** Encodes the rows in batches of 500 into one part, through the driver the plugin's layer provides. */
const encode = Effect.gen(function* () {
  const format = yield* FormatDriver
  yield* format.validate(schema)
  const part = yield* format.open(schema)
  const chunks: Array<Uint8Array> = []
  for (let start = 0; start < rows.length; start += 500) {
    const slice = rows.slice(start, start + 500)
    chunks.push(...(yield* part.write(makeBatch(schema, [slice.map((row) => row.id), slice.map((row) => row.name)]))))
  }
  chunks.push(...(yield* part.finish))
  return Buffer.concat(chunks).toString("utf8")
})

it("${type}: writes every row as one JSON line", async () => {
  const config = Effect.runSync(Schema.decodeUnknown(plugin.config)({}))
  const layer: Layer.Layer<FormatDriver, unknown> = plugin.make(config, { configDir: process.cwd(), env: {} })
  const text = await Effect.runPromise(Effect.provide(encode, layer))
  const lines = text.trimEnd().split("\\n").map((line) => JSON.parse(line) as unknown)
  expect(lines).toEqual(rows.map((row) => ({ id: String(row.id), name: row.name })))
})
`
