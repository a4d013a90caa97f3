import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { type BatchSchema, makeBatch } from "../../../src/core/batch.js"
import type { PartRecord } from "../../../src/core/manifest.js"
import { FormatDriver, type SinkDriverShape } from "../../../src/core/plugin.js"
import { DEFAULT_RETRY_POLICY } from "../../../src/core/retry.js"
import type { Catalog } from "../../../src/engine/table-format/catalog/catalog.js"
import { fileSystemCatalog } from "../../../src/engine/table-format/catalog/filesystem.js"
import { commitSnapshot } from "../../../src/engine/table-format/iceberg/commit.js"
import { evolveSchema, withFieldIds } from "../../../src/engine/table-format/iceberg/schema.js"
import { tableFilesOf } from "../../../src/engine/table-format/table-files.js"
import parquet from "../../../src/plugins/formats/parquet/index.js"
import { makeLocalDriver } from "../../../src/plugins/sinks/local/driver.js"
import { readIcebergTable } from "../../support/iceberg.js"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }, { name: "name", type: { kind: "string" } }] }
const written = evolveSchema(undefined, schema, 0)

/** A real Parquet part of `ids` at `key`, written through the sink, as the run records it. */
const writePart = (sink: SinkDriverShape, key: string, ids: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(parquet.config)({}).pipe(Effect.orDie)
    const format = yield* Effect.provide(FormatDriver, parquet.make(config, { configDir: ".", env: {} }))
    const encoder = yield* format.open(withFieldIds(schema, written.fields))
    const batch = makeBatch(schema, [ids.map((id) => BigInt(id)), ids.map((id) => `n${id}`)])
    const bytes = Buffer.concat([...(yield* encoder.write(batch)), ...(yield* encoder.finish)])
    yield* sink.put(key, bytes, "application/vnd.apache.parquet")
    return { path: key, rows: ids.length, size_bytes: bytes.length, content_fingerprint: "sha256:-" } satisfies PartRecord
  })

describe("Iceberg commit", () => {
  it.scopedLive("two writers loading the same head: one wins the version, the other reloads and appends on top of it", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "rivet-iceberg-race-"))
      dirs.push(dir)
      const sink = yield* makeLocalDriver({ path: dir }, { configDir: dir, env: {} })
      const files = tableFilesOf(sink, "shop.orders", DEFAULT_RETRY_POLICY)
      const catalog = fileSystemCatalog(files)
      // Both writers' first load returns before either commits: a race, every time.
      const bothLoaded = yield* Deferred.make<void>()
      let loads = 0
      const racing: Catalog = {
        ...catalog,
        load: Effect.tap(catalog.load, () =>
          Effect.suspend(() => {
            loads += 1
            if (loads === 2) return Deferred.succeed(bothLoaded, undefined)
            return loads === 1 ? Deferred.await(bothLoaded) : Effect.void
          })
        )
      }
      const a = yield* writePart(sink, "data/a.parquet", [1, 2, 3])
      const b = yield* writePart(sink, "data/b.parquet", [4, 5])
      const commit = (part: PartRecord, runId: string) =>
        commitSnapshot(files, racing, { parts: [part], schema, operation: "append", runId, partition: undefined, properties: {}, written })
      const [first, second] = yield* Effect.all([commit(a, "run-a"), commit(b, "run-b")], { concurrency: 2 })
      expect([first.lostRaces, second.lostRaces].sort()).toEqual([0, 1])
      expect([first.sequenceNumber, second.sequenceNumber].sort()).toEqual([1, 2])
      const { metadata, rows } = yield* Effect.promise(() => readIcebergTable(`file://${dir}`))
      // Whichever won, the second snapshot is built on the first: its totals include the winner's rows.
      expect(["2", "3"]).toContain(metadata.snapshots[0]!.summary["total-records"])
      expect(metadata.snapshots[1]!.summary["total-records"]).toBe("5")
      expect(rows.map((row) => Number(row["id"])).sort()).toEqual([1, 2, 3, 4, 5])
    }))
})
