import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { pathSegments, validateConfigValue as validateWith } from "../../src/registry/load-config.js"
import { DurationMs, MAX_DURATION_MS, parseDuration } from "../../src/core/duration.js"
import { parseYaml } from "../../src/config/yaml.js"
import { ByteSize, parseByteSize } from "../../src/core/size.js"

/** Decodes as the CLI does, with Node's file system for the plugins named by path. */
const validateConfigValue = (...args: Parameters<typeof validateWith>) => Effect.provide(validateWith(...args), NodeFileSystem.layer)

/** Property tests over config decoding with the built-in plugins (decoding is pure: nothing connects). */

const SOURCE = { type: "postgres", url: "postgres://postgres@127.0.0.1:1/none" }
const base = (): Record<string, unknown> => ({
  source: { ...SOURCE },
  exports: [
    { name: "orders", table: "orders", destination: { type: "local", path: "out/orders" } },
    {
      name: "events",
      query: "select 1",
      format: "csv",
      mode: "chunked",
      chunk_column: "id",
      quality: { row_count_min: 1 },
      destination: { type: "s3", bucket: "my-bucket", region: "us-east-1", endpoint: "http://127.0.0.1:9000" }
    },
    { name: "pipe", table: "pipe", format: "ndjson", destination: { type: "stdout" } }
  ]
})

const decode = (value: unknown) => validateConfigValue(value, "/tmp/h4-props", "props.yaml", { env: {} })

/** Every place a value can go: each key the decoders know, at each level, plus unknown keys and list items. */
const POSITIONS: ReadonlyArray<ReadonlyArray<string | number>> = [
  [],
  ["source"],
  ["exports"],
  ["exports", 0],
  ["exports", 7],
  ...["type", "url", "url_env", "embedded", "schema", "statement_timeout_s", "lock_timeout_s", "application_name", "surprise"].map((key) => ["source", key]),
  ["source", "embedded", "port"],
  ...[
    "name", "table", "query", "mode", "skip_empty", "cursor_column", "cursor_lag", "chunk_column", "chunk_size", "parallel",
    "chunk_checkpoint", "key_columns", "page_size", "time_column", "days_window", "format", "batch_size", "max_file_size",
    "columns", "quality", "on_schema_drift", "destination", "compression", "compression_level", "row_group_size", "surprise"
  ].flatMap((key) => [["exports", 0, key], ["exports", 1, key]]),
  ["exports", 0, "columns", "amount"],
  ["exports", 0, "columns", "amount", "type"],
  ...["row_count_min", "row_count_max", "null_ratio_max", "unique_columns", "surprise"].map((key) => ["exports", 1, "quality", key]),
  ...["type", "path", "surprise"].map((key) => ["exports", 0, "destination", key]),
  ...[
    "type", "bucket", "prefix", "region", "endpoint", "access_key_env", "secret_key_env", "session_token_env", "aws_profile",
    "allow_anonymous", "part_size", "upload_concurrency", "storage_class", "server_side_encryption", "kms_key_id", "tags",
    "surprise"
  ].map((key) => ["exports", 1, "destination", key]),
  ["exports", 2, "destination", "surprise"]
]

/** JSON plus what YAML can also produce: infinities, NaN, -0, dates, and strings that look like sizes or variables. */
const yamlish: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NaN, -0, Number.MAX_VALUE, 2 ** 53 + 2, new Date(0)),
  fc.constantFrom("12 parsecs", "999999TiB", "5m", "-1", "${NOPE}", "$${X}", "../../etc", "http://[::1]:9000", "a\u0000b", "x\ny"),
  fc.string({ unit: "grapheme", maxLength: 40 })
)

const setAt = (document: unknown, at: ReadonlyArray<string | number>, value: unknown): unknown => {
  if (at.length === 0) return value
  const [head, ...rest] = at
  const container = (
    Array.isArray(document) ? [...(document as Array<unknown>)] : typeof document === "object" && document !== null ? { ...document } : {}
  ) as Record<string | number, unknown>
  container[head!] = setAt(container[head!], rest, value)
  return container
}

/** True when `segments` (minus a final key that may be missing) leads somewhere inside `document`. */
const parentExists = (document: unknown, segments: ReadonlyArray<string | number>): boolean => {
  let node = document
  for (const segment of segments.slice(0, -1)) {
    if (typeof node !== "object" || node === null || !(segment in node)) return false
    node = (node as Record<string | number, unknown>)[segment]
  }
  return true
}

describe("config decoding properties", () => {
  it("any value at any position decodes or fails with ConfigErrors whose paths point into the document", async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...POSITIONS), yamlish, async (position, value) => {
        const document = setAt(base(), position, value)
        const exit = await Effect.runPromiseExit(decode(document))
        expect(Exit.isSuccess(exit), `defect at ${position.join(".")}`).toBe(true)
        if (!Exit.isSuccess(exit) || Either.isRight(exit.value)) return
        expect(exit.value.left.length).toBeGreaterThan(0)
        for (const error of exit.value.left) {
          expect(error._tag).toBe("ConfigError")
          expect(error.message.length).toBeGreaterThan(0)
          // Schema descriptions are sentences for `rivet schema`, not type names; nested failures are not repeated.
          expect(error.message).not.toMatch(/\., actual /)
          expect(error.message).not.toMatch(/^expected undefined, actual/i)
          if (error.path === "(root)") continue
          expect(parentExists(document, pathSegments(error.path)), `${error.path}: ${error.message}`).toBe(true)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("any text read as a config file fails with a ConfigError or decodes: never a defect", async () => {
    const piece = fc.constantFrom("source:", "exports:", "- ", "  ", "\t", "{", "}", "[", "]", ":", ",", "&a ", "*a", "!!binary ", "---\n", "\n", "'", '"', "#", "? ", "|\n", "${X}", "name: x")
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ unit: piece, maxLength: 30 }), fc.string({ maxLength: 60 })), async (text) => {
        const exit = await Effect.runPromiseExit(
          Effect.flatMap(Effect.either(parseYaml(text, "fuzz.yaml")), (parsed) =>
            Either.isLeft(parsed) ? Effect.succeed(Either.left([parsed.left])) : decode(parsed.right.value)
          )
        )
        expect(Exit.isSuccess(exit), text).toBe(true)
        if (Exit.isSuccess(exit) && Either.isLeft(exit.value)) {
          for (const error of exit.value.left) expect(error._tag).toBe("ConfigError")
        }
      }),
      { numRuns: 300 }
    )
  })

  const UNITS: ReadonlyArray<readonly [string, number]> = [
    ["", 1], ["b", 1], ["kb", 1024], ["kib", 1024], ["mb", 1024 ** 2], ["mib", 1024 ** 2],
    ["gb", 1024 ** 3], ["gib", 1024 ** 3], ["tb", 1024 ** 4], ["tib", 1024 ** 4]
  ]
  const randomCase = (text: string, flips: ReadonlyArray<boolean>) =>
    [...text].map((char, i) => (flips[i % Math.max(flips.length, 1)] ? char.toUpperCase() : char)).join("")

  /** A size written in any accepted spelling, with the byte count it must decode to. */
  const sizeText = fc
    .tuple(fc.constantFrom(...UNITS), fc.integer({ min: 1, max: 4096 }), fc.boolean(), fc.array(fc.boolean(), { maxLength: 3 }), fc.constantFrom("", " "))
    .map(([[unit, multiplier], count, half, flips, space]) => ({
      text: `${count}${half ? ".5" : ""}${space}${randomCase(unit, flips)}`,
      bytes: Math.floor((count + (half ? 0.5 : 0)) * multiplier)
    }))

  const exportName = fc
    .stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$/)
    .filter((name) => !name.includes(".."))

  const splitOnStdout = (spec: { readonly destination: string; readonly format: string }) =>
    spec.destination === "stdout" && spec.format !== "ndjson"

  it("valid configs from a small grammar decode with their names, plugins and sizes intact", async () => {
    const exportSpec = fc.record({
      format: fc.constantFrom("parquet", "csv", "ndjson"),
      gzip: fc.boolean(),
      // max_file_size takes sizes from 64 KiB up (smaller ones are refused: config.test.ts).
      size: fc.option(sizeText.filter((size) => size.bytes >= 64 * 1024), { nil: undefined }),
      destination: fc.constantFrom("local", "s3", "stdout"),
      endpoint: fc.constantFrom("http://localhost:9000", "http://127.0.0.1:9000", "https://[::1]:9443", "http://127.0.0.2")
    })
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(fc.tuple(exportName, exportSpec), { minLength: 1, maxLength: 4, selector: ([name]) => name }), async (specs) => {
        const exports = specs.map(([name, spec]) => ({
          name,
          table: "public.orders",
          format: spec.format,
          ...(spec.gzip ? { compression: "gzip" } : {}),
          // Parts of a CSV or Parquet stream cannot be concatenated on stdout: refused (see config.test.ts).
          ...(spec.size && !splitOnStdout(spec) ? { max_file_size: spec.size.text } : {}),
          destination:
            spec.destination === "local"
              ? { type: "local", path: `out/${name}` }
              : spec.destination === "s3"
                ? { type: "s3", bucket: "my-bucket", region: "us-east-1", prefix: `exports/${name}`, endpoint: spec.endpoint }
                : { type: "stdout" }
        }))
        const result = await Effect.runPromise(decode({ source: SOURCE, exports }))
        expect(Either.isRight(result), JSON.stringify(Either.isLeft(result) ? result.left : [])).toBe(true)
        if (Either.isLeft(result)) return
        expect(result.right.exports.map((spec) => spec.name)).toEqual(specs.map(([name]) => name))
        result.right.exports.forEach((decoded, index) => {
          const [name, spec] = specs[index]!
          expect(decoded.format.plugin.type).toBe(spec.format)
          expect((decoded.format.config as { compression: string }).compression).toBe(spec.gzip ? "gzip" : spec.format === "parquet" ? "zstd" : "none")
          expect(decoded.maxFileSize).toBe(splitOnStdout(spec) ? undefined : spec.size?.bytes)
          expect(decoded.destination.plugin.type).toBe(spec.destination)
          if (spec.destination === "s3") expect(decoded.destination.config).toMatchObject({ prefix: `exports/${name}/`, endpoint: spec.endpoint })
        })
      }),
      { numRuns: 60 }
    )
  })

  it("sizes: every accepted spelling parses to its byte count, and Schema decode(encode(n)) = n", () => {
    fc.assert(
      fc.property(sizeText, ({ text, bytes }) => {
        expect(parseByteSize(text)).toBe(bytes)
      }),
      { numRuns: 300 }
    )
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (bytes) => {
        expect(parseByteSize(String(bytes))).toBe(bytes)
        expect(Schema.decodeSync(ByteSize)(Schema.encodeSync(ByteSize)(bytes))).toBe(bytes)
      }),
      { numRuns: 200 }
    )
  })

  it("durations: every unit parses to its milliseconds, and Schema decode(encode(ms)) = ms", () => {
    const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
    fc.assert(
      fc.property(fc.constantFrom(...(Object.keys(UNIT_MS) as Array<keyof typeof UNIT_MS>)), fc.integer({ min: 0, max: 100_000 }), fc.boolean(), (unit, count, upper) => {
        expect(parseDuration(`${count}${upper ? unit.toUpperCase() : unit}`)).toBe(count * UNIT_MS[unit])
      }),
      { numRuns: 300 }
    )
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_DURATION_MS }), (ms) => {
        expect(Schema.decodeSync(DurationMs)(Schema.encodeSync(DurationMs)(ms))).toBe(ms)
      }),
      { numRuns: 200 }
    )
    expect(parseDuration(`${MAX_DURATION_MS + 1}ms`)).toBeUndefined()
  })

  const SIZE_GRAMMAR = /^\s*\d+(\.\d+)?\s*(b|kb|kib|mb|mib|gb|gib|tb|tib)?\s*$/i
  const DURATION_GRAMMAR = /^\s*\d+(\.\d+)?\s*(ms|s|m|h|d)\s*$/i
  const nearMiss = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.tuple(fc.constantFrom("-", "+", "", "0x", "1e", "."), fc.nat(9999), fc.constantFrom("", "kb", "ms", "x", "pb", "min", "hours", " m s", "..")).map(
      ([prefix, n, suffix]) => `${prefix}${n}${suffix}`
    )
  )

  it("text outside the size grammar is rejected with a message naming it", () => {
    fc.assert(
      fc.property(nearMiss.filter((text) => !SIZE_GRAMMAR.test(text)), (text) => {
        expect(parseByteSize(text)).toBeUndefined()
        const decoded = Schema.decodeUnknownEither(ByteSize)(text)
        expect(Either.isLeft(decoded)).toBe(true)
        if (Either.isLeft(decoded)) expect(decoded.left.message).toContain(`invalid size ${JSON.stringify(text)}`)
      }),
      { numRuns: 300 }
    )
  })

  it("text outside the duration grammar is rejected with a message naming it", () => {
    fc.assert(
      fc.property(nearMiss.filter((text) => !DURATION_GRAMMAR.test(text)), (text) => {
        expect(parseDuration(text)).toBeUndefined()
        const decoded = Schema.decodeUnknownEither(DurationMs)(text)
        expect(Either.isLeft(decoded)).toBe(true)
        if (Either.isLeft(decoded)) expect(decoded.left.message).toContain(`invalid duration ${JSON.stringify(text)}`)
      }),
      { numRuns: 300 }
    )
  })
})
