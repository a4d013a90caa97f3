import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { validateConfigValue as validateWith } from "../../src/registry/load-config.js"
import { interpolate } from "../../src/config/yaml.js"
import type { ConfigError, FormatError, SinkError, SourceError } from "../../src/core/errors.js"
import type { FormatDriver, SinkDriver, SourceDriver } from "../../src/core/plugin.js";
import { defineFormat, defineSink, defineSource } from "../../src/core/plugin.js"

/** Decodes as the CLI does, with Node's file system for the plugins named by path. */
const validateConfigValue = (...args: Parameters<typeof validateWith>) => Effect.provide(validateWith(...args), NodeFileSystem.layer)

const source = defineSource({
  type: "fakedb",
  config: Schema.Struct({ url: Schema.String }),
  make: () => Layer.die("unused") as Layer.Layer<SourceDriver, SourceError>
})
const format = defineFormat({
  type: "fakefmt",
  config: Schema.Struct({ compression: Schema.optional(Schema.Literal("none", "zstd")) }),
  make: () => Layer.die("unused") as Layer.Layer<FormatDriver, FormatError>
})
const sink = defineSink({
  type: "fakesink",
  config: Schema.Struct({ path: Schema.String }),
  make: () => Layer.die("unused") as Layer.Layer<SinkDriver, SinkError>
})
const plugins = [source, format, sink] as never

const valid = {
  source: { type: "fakedb", url: "postgres://x" },
  exports: [{ name: "orders", table: "public.orders", format: "fakefmt", destination: { type: "fakesink", path: "out" } }]
}

const problems = (value: unknown, env: Record<string, string> = {}) =>
  Effect.map(validateConfigValue(value, "/tmp", "test.yaml", { plugins, env }), (result) =>
    Either.isLeft(result) ? result.left.map((e: ConfigError) => ({ path: e.path, message: e.message, hint: e.hint })) : []
  )

const withExport = (patch: Record<string, unknown>) => ({ ...valid, exports: [{ ...valid.exports[0], ...patch }] })

describe("config decoding", () => {
  it.effect("decodes a valid config with the chosen plugins", () =>
    Effect.gen(function* () {
      const result = yield* validateConfigValue(valid, "/tmp", "test.yaml", { plugins })
      expect(Either.isRight(result)).toBe(true)
      if (Either.isRight(result)) {
        const [spec] = result.right.exports
        expect(spec?.table).toEqual({ schema: "public", name: "orders" })
        expect(spec?.batchSize).toBe(10_000)
        expect(spec?.format.plugin.type).toBe("fakefmt")
        expect(spec?.destination.config).toEqual({ path: "out" })
      }
    }))

  it.effect("accepts the short form of a columns: override (amount: decimal(18,2), as the Rust rivet writes it)", () =>
    Effect.gen(function* () {
      const result = yield* validateConfigValue(
        withExport({ columns: { amount: "decimal(18,2)", total: { type: "int64" } } }),
        "/tmp",
        "test.yaml",
        { plugins }
      )
      expect(Either.isRight(result)).toBe(true)
      if (Either.isRight(result)) {
        expect(result.right.exports[0]?.columnTypes.get("amount")).toEqual({ kind: "decimal", precision: 18, scale: 2 })
        expect(result.right.exports[0]?.columnTypes.get("total")).toEqual({ kind: "int64" })
      }
      expect((yield* problems(withExport({ columns: { amount: "decimal(99,2)" } })))[0]?.path).toBe("exports[0].columns.amount")
    }))

  it.effect("explains an unquoted decimal(p,s) split at its comma by a YAML flow mapping", () =>
    Effect.gen(function* () {
      // `columns: { amount: decimal(18,2) }` parses as { amount: "decimal(18", "2)": null }
      const found = yield* problems(withExport({ columns: { amount: "decimal(18", "2)": null } }))
      const split = found.find((problem) => problem.path === 'exports[0].columns["2)"]')
      expect(split?.hint).toMatch(/quote it, columns: \{ amount: "decimal\(18,2\)" \}/)
    }))

  it.effect("tells a user migrating from the Rust rivet what to write instead of its keys", () =>
    Effect.gen(function* () {
      const top = yield* problems({ ...valid, parallel_export_processes: 2 })
      expect(top.find((problem) => problem.path === "parallel_export_processes")?.hint).toMatch(/Rust rivet; .*parallel_exports: N/)
      const found = yield* problems({
        ...valid,
        source: { ...valid.source, mongo: {} },
        exports: [{ ...valid.exports[0], tables: ["a", "b"], chunk_dense: true }]
      })
      const hintOf = (path: string) => found.find((problem) => problem.path === path)?.hint
      expect(hintOf("source.mongo")).toMatch(/Rust rivet; MongoDB is not a supported source/)
      // Not "did you mean 'table'?": tables captured several tables through one change stream.
      expect(hintOf("exports[0].tables")).toMatch(/Rust rivet; .*one export per table/)
      expect(hintOf("exports[0].chunk_dense")).toMatch(/mode: keyset for equal-sized pages/)
      // Other keys, and plugin blocks, keep the generic hint.
      const plugin = yield* problems(withExport({ destination: { type: "fakesink", path: "out", tuning: {} } }))
      expect(plugin[0]?.hint).not.toMatch(/Rust rivet/)
    }))

  it.effect("decodes what a migrated Rust config keeps: meta columns, a coalesce cursor, chunk attempts, scheduling notices", () =>
    Effect.gen(function* () {
      const specOf = (patch: Record<string, unknown>) =>
        Effect.flatMap(validateConfigValue(withExport(patch), "/tmp", "test.yaml", { plugins }), (result) =>
          Either.isRight(result) ? Effect.succeed(result.right.exports[0]!) : Effect.die(result.left.map((e) => e.message))
        )
      expect((yield* specOf({ meta_columns: ["row_hash", "exported_at"] })).metaColumns).toEqual(["row_hash", "exported_at"])
      expect((yield* specOf({ meta_columns: { row_hash: true, exported_at: true } })).metaColumns).toEqual(["exported_at", "row_hash"])
      expect((yield* specOf({ meta_columns: { exported_at: false } })).metaColumns).toEqual([])
      expect((yield* specOf({})).metaColumns).toEqual([])
      const incremental = yield* specOf({ mode: "incremental", cursor_column: "updated_at", cursor_fallback_column: "created_at", incremental_cursor_mode: "coalesce" })
      expect(incremental.mode.settings).toEqual({ kind: "incremental", cursorColumn: "updated_at", fallbackColumn: "created_at" })
      expect((yield* specOf({ mode: "chunked", chunk_max_attempts: 2 })).mode.settings).toMatchObject({ kind: "chunked", maxAttempts: 2 })
      expect((yield* specOf({ mode: "keyset", chunk_max_attempts: 1 })).mode.settings).toMatchObject({ kind: "keyset", maxAttempts: 1 })
      const scheduled = yield* specOf({ wave: 3, parallel_safe: false, source_group: "replica", reconcile_required: true })
      expect(scheduled.notices?.map((notice) => notice.path)).toEqual([
        "exports[0].wave",
        "exports[0].parallel_safe",
        "exports[0].source_group",
        "exports[0].reconcile_required"
      ])
      expect(scheduled.notices?.[0]?.message).toMatch(/^has no effect in Rivet: it is scheduling advice of the Rust rivet's plan command/)
      expect((yield* specOf({})).notices).toEqual([])
    }))

  it.effect("says a missing source is missing, and reports it with the exports' problems in one pass", () =>
    Effect.gen(function* () {
      const found = yield* problems({ exports: [{ ...valid.exports[0], batchsize: 5 }], load: {} })
      expect(found.map((problem) => `${problem.path}: ${problem.message}`)).toEqual([
        "load: unknown key 'load'",
        "source: is missing",
        "exports[0].batchsize: unknown key 'batchsize'"
      ])
      expect(found[1]?.hint).toMatch(/source: \{ type: postgres, url_env: DATABASE_URL \}/)
      expect((yield* problems({ ...valid, source: null })).map((problem) => problem.message)).toEqual(["is missing"])
    }))

  it.effect("refuses several parts of a CSV/Parquet export on stdout (chunked, keyset, max_file_size)", () =>
    Effect.gen(function* () {
      // stdout and ndjson are the built-in plugins.
      const check = (patch: Record<string, unknown>) =>
        Effect.map(
          validateConfigValue(withExport({ destination: { type: "stdout" }, ...patch }), "/tmp", "test.yaml", { plugins }),
          (result) => (Either.isLeft(result) ? result.left.map((e: ConfigError) => `${e.path}: ${e.message}`) : [])
        )
      expect(yield* check({ mode: "chunked" })).toEqual([
        "exports[0].mode: mode: chunked writes several parts, which the stdout destination would concatenate into one unreadable fakefmt stream"
      ])
      expect((yield* check({ mode: "keyset", key_columns: ["id"] }))[0]).toMatch(/^exports\[0\]\.mode: mode: keyset/)
      expect((yield* check({ max_file_size: "1MiB" }))[0]).toMatch(/^exports\[0\]\.max_file_size: max_file_size writes/)
      expect(yield* check({})).toEqual([])
      expect(yield* check({ format: "ndjson", mode: "chunked", max_file_size: "1MiB" })).toEqual([])
    }))

  it.effect("names the path of an unknown key and suggests the closest one", () =>
    Effect.gen(function* () {
      const found = yield* problems(withExport({ destination: { type: "fakesink", pth: "out" } }))
      expect(found).toContainEqual({ path: "exports[0].destination.pth", message: "unknown key 'pth'", hint: "did you mean 'path'?" })
    }))

  it.effect("routes export keys to the format plugin and rejects unknown ones", () =>
    Effect.gen(function* () {
      expect(yield* problems(withExport({ compression: "zstd" }))).toEqual([])
      const found = yield* problems(withExport({ compresion: "zstd" }))
      expect(found).toEqual([
        { path: "exports[0].compresion", message: "unknown key 'compresion'", hint: "did you mean 'compression'?" }
      ])
      const wrong = yield* problems(withExport({ compression: "lz5" }))
      expect(wrong[0]?.path).toBe("exports[0].compression")
    }))

  it.effect("reports unknown plugin types with the available ones", () =>
    Effect.gen(function* () {
      const found = yield* problems(withExport({ destination: { type: "fakesnk", path: "x" } }))
      expect(found[0]).toMatchObject({ path: "exports[0].destination.type", hint: "did you mean 'fakesink'?" })
      const noType = yield* problems({ ...valid, source: { url: "x" } })
      expect(noType[0]).toMatchObject({ path: "source.type", message: "is required" })
    }))

  it.effect("keeps a plugin's own message for a missing key (S3 region: any value with MinIO)", () =>
    Effect.gen(function* () {
      const value = withExport({ destination: { type: "s3", bucket: "my-data-bucket", endpoint: "http://localhost:9000" } })
      const found = yield* validateConfigValue(value, "/tmp", "test.yaml", { plugins: [source, format] as never, env: {} })
      const messages = Either.isLeft(found) ? found.left.map((e: ConfigError) => `${e.path}: ${e.message}`) : []
      expect(messages).toEqual([
        "exports[0].destination.region: region is required: the bucket's AWS region, e.g. us-east-1 (with a custom endpoint such as MinIO it is required but can be any value, e.g. us-east-1)"
      ])
    }))

  it.effect("refuses identifiers over 63 UTF-8 bytes (PostgreSQL would truncate them) and accepts 63", () =>
    Effect.gen(function* () {
      const limit = /is 64 bytes long: identifiers are at most 63 bytes/
      expect(yield* problems(withExport({ table: "t".repeat(63) }))).toEqual([])
      expect(yield* problems(withExport({ table: `${"s".repeat(63)}.${"t".repeat(63)}` }))).toEqual([])
      const table = yield* problems(withExport({ table: "t".repeat(64) }))
      expect(table.map((p) => p.path)).toEqual(["exports[0].table"])
      expect(table[0]?.message).toMatch(limit)
      expect((yield* problems(withExport({ table: `${"s".repeat(64)}.orders` })))[0]?.message).toMatch(/^schema name/)
      // 32 characters, 64 bytes: the limit is in bytes, as PostgreSQL counts.
      const wide = "é".repeat(32)
      expect(yield* problems(withExport({ mode: "incremental", cursor_column: "é".repeat(31) + "e" }))).toEqual([])
      const cursor = yield* problems(withExport({ mode: "incremental", cursor_column: wide }))
      expect(cursor.map((p) => [p.path, limit.test(p.message)])).toEqual([["exports[0].cursor_column", true]])
      const key = yield* problems(withExport({ mode: "keyset", key_columns: ["id", "k".repeat(64)] }))
      expect(key.map((p) => [p.path, limit.test(p.message)])).toEqual([["exports[0].key_columns", true]])
      const override = yield* problems(withExport({ columns: { ["c".repeat(64)]: "int64" } }))
      expect(override[0]?.message).toMatch(limit)
    }))

  it.effect("rejects table and query together, duplicates, bad names, bad sizes, empty exports", () =>
    Effect.gen(function* () {
      expect((yield* problems(withExport({ query: "select 1" })))[0]?.message).toContain("exactly one of 'table' or 'query'")
      const duplicate = yield* problems({ ...valid, exports: [valid.exports[0], valid.exports[0]] })
      expect(duplicate[0]).toMatchObject({ path: "exports[1].name" })
      expect(duplicate[0]?.message).toContain("duplicate export name 'orders'")
      expect((yield* problems(withExport({ name: "../etc" })))[0]?.path).toBe("exports[0].name")
      const size = yield* problems(withExport({ max_file_size: "12 parsecs" }))
      expect(size[0]).toMatchObject({ path: "exports[0].max_file_size" })
      expect(size[0]?.message).toContain("invalid size")
      expect((yield* problems({ ...valid, exports: [] }))[0]).toMatchObject({ path: "exports" })
      expect((yield* problems(withExport({ batch_size: 0 })))[0]?.path).toBe("exports[0].batch_size")
      expect((yield* problems(withExport({ columns: { amount: { type: "decimal(99,2)" } } })))[0]?.path).toBe(
        "exports[0].columns.amount.type"
      )
    }))

  it.effect("decodes every mode with its defaults", () =>
    Effect.gen(function* () {
      const modeOf = (patch: Record<string, unknown>) =>
        Effect.map(validateConfigValue(withExport(patch), "/tmp", "test.yaml", { plugins }), (result) =>
          Either.isRight(result) ? result.right.exports[0]?.mode.settings : result.left.map((e) => e.message)
        )
      expect(yield* modeOf({})).toEqual({ kind: "full" })
      expect(yield* modeOf({ mode: "incremental", cursor_column: "updated_at", cursor_lag: "5m" })).toEqual({
        kind: "incremental",
        cursorColumn: "updated_at",
        cursorLagMs: 300_000
      })
      expect(yield* modeOf({ mode: "chunked" })).toEqual({
        kind: "chunked",
        chunkColumn: undefined,
        chunkSize: 100_000,
        parallel: 1,
        checkpoint: false
      })
      expect(yield* modeOf({ mode: "keyset", key_columns: "id", chunk_checkpoint: true })).toEqual({
        kind: "keyset",
        keyColumns: ["id"],
        pageSize: 100_000,
        checkpoint: true
      })
      expect(yield* modeOf({ mode: "time_window", time_column: "at", days_window: 7 })).toEqual({
        kind: "time_window",
        timeColumn: "at",
        daysWindow: 7,
        unixSeconds: false
      })
    }))

  it.effect("names mode keys that are missing, belong to another mode, or are out of range", () =>
    Effect.gen(function* () {
      expect(yield* problems(withExport({ mode: "incremental" }))).toEqual([
        { path: "exports[0].cursor_column", message: "is required with mode: incremental", hint: "e.g. cursor_column: updated_at" }
      ])
      expect(yield* problems(withExport({ chunk_size: 10, parallel: 2 }))).toEqual([
        {
          path: "exports[0].chunk_size",
          message: "applies to mode: chunked or cdc only, but this export's mode is full",
          hint: "set mode: chunked or remove chunk_size"
        },
        {
          path: "exports[0].parallel",
          message: "applies to mode: chunked or cdc only, but this export's mode is full",
          hint: "set mode: chunked or remove parallel"
        }
      ])
      const paths = (value: unknown) => Effect.map(problems(value), (list) => list.map((p) => p.path))
      expect(yield* paths(withExport({ mode: "time_window" }))).toEqual([
        "exports[0].time_column",
        "exports[0].days_window"
      ])
      expect(yield* paths(withExport({ mode: "chunked", table: undefined, query: "SELECT 1" }))).toEqual([
        "exports[0].chunk_column"
      ])
      expect(yield* paths(withExport({ mode: "chunked", parallel: 0 }))).toEqual(["exports[0].parallel"])
      expect(yield* paths(withExport({ mode: "incremental", cursor_column: "a", cursor_lag: "soon" }))).toEqual([
        "exports[0].cursor_lag"
      ])
      expect(yield* paths(withExport({ mode: "sometimes" }))).toEqual(["exports[0].mode"])
      expect(yield* paths(withExport({ mode: "keyset", key_columns: ["a", "a"] }))).toEqual(["exports[0].key_columns"])
    }))

  it.effect("collects every problem in one pass", () =>
    Effect.gen(function* () {
      const found = yield* problems({
        source: { type: "fakedb" },
        exports: [{ name: "a", destination: { type: "fakesink" } }, { name: "b b", table: "t", destination: {} }]
      })
      expect(found.map((p) => p.path)).toEqual(
        expect.arrayContaining(["source.url", "exports[0].destination.path", "exports[1].name", "exports[1].destination.type"])
      )
    }))

  it.effect("substitutes ${VAR} in values and names unset variables", () =>
    Effect.gen(function* () {
      expect(yield* interpolate({ a: ["x-${A}-$${B}"] }, { A: "1" })).toEqual({ a: ["x-1-${B}"] })
      const found = yield* problems(withExport({ destination: { type: "fakesink", path: "${OUT_DIR}" } }))
      expect(found[0]).toMatchObject({ path: "exports[0].destination.path" })
      expect(found[0]?.message).toContain("environment variable 'OUT_DIR' is not set")
      const set = yield* problems(withExport({ destination: { type: "fakesink", path: "${OUT_DIR}" } }), { OUT_DIR: "/x" })
      expect(set).toEqual([])
    }))

  it.effect("types a number or boolean that is exactly one ${VAR} (batch_size: ${BATCH}), as the Rust rivet does", () =>
    Effect.gen(function* () {
      const env = { BATCH: "5000", SKIP: "true", CHUNK: "20000", WORD: "many" }
      const result = yield* validateConfigValue(
        withExport({ batch_size: "${BATCH}", skip_empty: "${SKIP}", mode: "chunked", chunk_size: "${CHUNK}" }),
        "/tmp",
        "test.yaml",
        { plugins, env }
      )
      expect(Either.isRight(result)).toBe(true)
      if (Either.isRight(result)) {
        expect(result.right.exports[0]?.batchSize).toBe(5000)
        expect(result.right.exports[0]?.skipEmpty).toBe(true)
      }
      // Not a number, or not the whole value: still refused, with the substituted text shown.
      expect((yield* problems(withExport({ batch_size: "${WORD}" }), env))[0]?.message).toBe('expected number, actual "many"')
      expect((yield* problems(withExport({ batch_size: "1${BATCH}" }), env))[0]?.message).toBe('expected number, actual "15000"')
      // A string key keeps the text: a name that looks like a number stays a string.
      expect(yield* problems(withExport({ name: "${BATCH}" }), env)).toEqual([])
    }))
})
