import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigValue as validateWith } from "../../../src/registry/load-config.js"
import { identityDifferences, runIdentityOf } from "../../../src/engine/modes/run-identity.js"

// The identity a checkpointed run records is derived from the whole decoded config, minus a short list of keys that
// cannot change what is written: these pin which keys differ and which do not, and that no secret is in it.

const baseExport = {
  name: "orders",
  query: "SELECT * FROM orders",
  mode: "chunked",
  chunk_column: "id",
  chunk_size: 1000,
  parallel: 2,
  chunk_checkpoint: true,
  format: "parquet",
  destination: { type: "local", path: "out" }
}
const baseSource = { type: "postgres", url: "postgres://app:first-secret@db:5432/shop" }

/** The identity of the config's only export, with the driver identity a postgres source would report for its URL. */
const identityOf = (overrides: { source?: Record<string, unknown>; export?: Record<string, unknown> } = {}) =>
  Effect.gen(function* () {
    const decoded = yield* Effect.provide(
      validateWith({ source: { ...baseSource, ...overrides.source }, exports: [{ ...baseExport, ...overrides.export }] }, "/tmp/rivet-identity", "test.yaml"),
      NodeFileSystem.layer
    )
    if (Either.isLeft(decoded)) throw new Error(decoded.left.map((error) => error.message).join("; "))
    const config = decoded.right
    return runIdentityOf({
      spec: config.exports[0]!,
      sourceType: config.source.plugin.type,
      sourceConfig: config.source.config,
      source: { displayUrl: "postgres://app:***@db:5432/shop", identity: { host: "db", port: "5432", database: "shop", user: "app" } },
      destinationUri: "/tmp/rivet-identity/out"
    })
  })

const differences = (overrides: Parameters<typeof identityOf>[0]) =>
  Effect.gen(function* () {
    return identityDifferences(yield* identityOf(), yield* identityOf(overrides))
  })

describe("run identity", () => {
  it.effect("holds the source's place, the format's options and the export's data-shaping keys, never the password", () =>
    Effect.gen(function* () {
      const identity = yield* identityOf()
      expect(identity).toMatchObject({
        "source.type": '"postgres"',
        "source.database": '"shop"',
        "source.user": '"app"',
        "source.schema": '"public"',
        "format.type": '"parquet"',
        "format.compression": '"zstd"',
        "destination.uri": '"/tmp/rivet-identity/out"',
        query: '"SELECT * FROM orders"',
        "mode.chunk_size": "1000"
      })
      expect(JSON.stringify(identity)).not.toContain("first-secret")
      expect(Object.keys(identity).some((key) => key.startsWith("source.url") || key.includes("timeout"))).toBe(false)
    }))

  it.effect("names each byte-shaping difference: format options, max_file_size, column types, meta columns, partitioning", () =>
    Effect.gen(function* () {
      expect(yield* differences({ export: { compression: "none" } })).toEqual(["format.compression: run has zstd, this config has none"])
      expect(yield* differences({ export: { row_group_size: 5000 } })).toEqual(["format.row_group_size: run has (not set), this config has 5000"])
      expect(yield* differences({ export: { max_file_size: "64MiB" } })).toEqual([`max_file_size: run has (not set), this config has ${64 * 1024 * 1024}`])
      expect(yield* differences({ export: { columns: { amount: "decimal(18,2)" } } })).toHaveLength(1)
      expect((yield* differences({ export: { columns: { amount: "decimal(18,2)" } } }))[0]).toMatch(/^columns\.amount: run has \(not set\)/)
      expect(yield* differences({ export: { meta_columns: ["exported_at"] } })).toHaveLength(1)
      expect((yield* differences({ export: { partition_by: ["region"] } })).every((line) => line.startsWith("partition_by."))).toBe(true)
      expect(yield* differences({ source: { schema: "archive" } })).toEqual(["source.schema: run has public, this config has archive"])
    }))

  it.effect("does not differ for the password, timeouts, batch_size, parallel, quality gates or the session's name", () =>
    Effect.gen(function* () {
      expect(
        yield* differences({
          source: { url: "postgres://app:another-secret@db:5432/shop", statement_timeout_s: 5, lock_timeout_s: 1, application_name: "x" },
          export: { batch_size: 10, parallel: 8, quality: { row_count_min: 1 }, on_schema_drift: "fail", chunk_max_attempts: 9 }
        })
      ).toEqual([])
    }))
})
