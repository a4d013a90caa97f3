import { spawnSync } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { readdir, readFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join, relative } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { SinkDriver } from "../../../../src/core/plugin.js"
import type { PluginContext } from "../../../../src/core/plugin.js"
import { LocalConfig } from "../../../../src/plugins/sinks/local/config.js"
import { LOCAL_BLOCK_SIZE, makeLocalDriver } from "../../../../src/plugins/sinks/local/driver.js"
import { fsError } from "../../../../src/plugins/sinks/local/errors.js"
import localSink from "../../../../src/plugins/sinks/local/index.js"
import { runSinkConformance } from "../../../../src/testing/index.js"
import { denyWrites, skipBecause } from "../../../support/environment.js"

const base = mkdtempSync(join(tmpdir(), "rivet-local-sink-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

const context = (configDir = base): PluginContext => ({ configDir, env: {} })
const layerAt = (path: string, configDir?: string) => localSink.make({ path }, context(configDir))
const encode = (text: string) => new TextEncoder().encode(text)

/** Every file under `dir`, dot-files included, as `/`-separated keys. */
const filesUnder = async (dir: string): Promise<Array<string>> => {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split("\\").join("/"))
    .sort()
}

const conformanceRoot = join(base, "conformance")
const blocker = join(base, "a-file")
writeFileSync(blocker, "not a directory")

runSinkConformance("local sink conformance", {
  makeLayer: () => layerAt(conformanceRoot),
  readBack: (key) =>
    readFile(join(conformanceRoot, key)).then(
      (bytes) => new Uint8Array(bytes),
      () => undefined
    ),
  listKeys: () => filesUnder(conformanceRoot),
  missingDestinationLayer: () => layerAt(join(blocker, "below"))
}, { describe, it })

describe("local sink", () => {
  it.effect("create writes only when the key is free (of two writers at once exactly one wins); readRange reads a range", () =>
    Effect.gen(function* () {
      const dir = join(base, "create")
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      const bytes = (text: string) => new TextEncoder().encode(text)
      const outcomes = yield* Effect.all(
        ["first", "second", "third"].map((text) => sink.create!("metadata/v1.metadata.json", bytes(text), "application/json")),
        { concurrency: "unbounded" }
      )
      expect([...outcomes].sort()).toEqual(["created", "exists", "exists"])
      const kept = readFileSync(join(dir, "metadata/v1.metadata.json"), "utf8")
      expect(["first", "second", "third"]).toContain(kept)
      // No temp file is left by the losers.
      expect(yield* Effect.promise(() => filesUnder(dir))).toEqual(["metadata/v1.metadata.json"])
      expect(new TextDecoder().decode(yield* sink.readRange!("metadata/v1.metadata.json", 1, 3))).toBe(kept.slice(1, 4))
    }))

  it.effect("sweep removes temp files of writers that are gone, never those of live ones or final files", () =>
    Effect.gen(function* () {
      const dir = join(base, "sweep")
      mkdirSync(join(dir, "sub"), { recursive: true })
      const dead = spawnSync(process.execPath, ["-e", "0"]).pid
      const names = {
        deadTop: `.a.parquet.tmp-${dead}-0123456789ab`,
        deadNested: `sub/.b.parquet.tmp-${dead}-0123456789ab`,
        live: `.c.parquet.tmp-${process.ppid}-0123456789ab`,
        own: `.d.parquet.tmp-${process.pid}-0123456789ab`,
        final: "e.parquet"
      }
      for (const name of Object.values(names)) writeFileSync(join(dir, name), "x")
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      const swept = yield* sink.sweep!
      expect([...swept].sort()).toEqual([names.deadTop, names.deadNested].sort())
      expect(yield* Effect.promise(() => filesUnder(dir))).toEqual([names.live, names.own, names.final].sort())
    }))

  it.effect("keeps each upload in a .<name>.tmp-<random> file until complete, then renames it", () =>
    Effect.gen(function* () {
      const dir = join(base, "temp-naming")
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      const handle = yield* sink.begin("out/part.bin", "application/octet-stream")
      yield* handle.writeBlock(1, encode("tail"))
      yield* handle.writeBlock(0, new Uint8Array(LOCAL_BLOCK_SIZE).fill(7))
      const during = readdirSync(join(dir, "out"))
      expect(during).toHaveLength(1)
      expect(during[0]).toMatch(/^\.part\.bin\.tmp-\d+-[0-9a-f]{12}$/)
      yield* handle.complete(2)
      expect(readdirSync(join(dir, "out"))).toEqual(["part.bin"])
      const stored = readFileSync(join(dir, "out", "part.bin"))
      expect(stored.length).toBe(LOCAL_BLOCK_SIZE + 4)
      expect(stored.subarray(LOCAL_BLOCK_SIZE).toString()).toBe("tail")

      const aborted = yield* sink.begin("out/aborted.bin", "application/octet-stream")
      yield* aborted.writeBlock(0, encode("x"))
      expect(readdirSync(join(dir, "out"))).toHaveLength(2)
      yield* aborted.abort
      expect(readdirSync(join(dir, "out"))).toEqual(["part.bin"])
    })
  )

  it.effect("discards uploads still open when the layer's scope closes", () =>
    Effect.gen(function* () {
      const dir = join(base, "scope-close")
      yield* Effect.scoped(
        Effect.gen(function* () {
          const sink = yield* makeLocalDriver({ path: dir }, context())
          const handle = yield* sink.begin("left-open.bin", "application/octet-stream")
          yield* handle.writeBlock(0, encode("partial"))
          expect(readdirSync(dir)).toHaveLength(1)
        })
      )
      expect(readdirSync(dir)).toEqual([])
    })
  )

  it.effect("refuses a complete whose blocks do not add up, and a block larger than the block size", () =>
    Effect.gen(function* () {
      const dir = join(base, "bad-blocks")
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      const handle = yield* sink.begin("gap.bin", "application/octet-stream")
      yield* handle.writeBlock(1, encode("b"))
      const gap = yield* Effect.flip(handle.complete(2))
      expect(gap.message).toContain("block 0 of 2 was never written")
      const short = yield* sink.begin("short.bin", "application/octet-stream")
      yield* short.writeBlock(0, encode("a"))
      yield* short.writeBlock(1, encode("b"))
      expect((yield* Effect.flip(short.complete(2))).message).toContain(`must be ${LOCAL_BLOCK_SIZE} bytes`)
      const tooBig = yield* Effect.flip(handle.writeBlock(0, new Uint8Array(LOCAL_BLOCK_SIZE + 1)))
      expect(tooBig.message).toContain("more than the block size")
      yield* handle.abort
      yield* short.abort
      expect((yield* Effect.flip(handle.complete(2))).reason).toBe("Conflict")
      expect(readdirSync(dir)).toEqual([])
    })
  )

  it.effect("resolves a relative path against the config directory; label and uri say where", () =>
    Effect.gen(function* () {
      const configDir = join(base, "project")
      const sink = yield* Effect.provide(SinkDriver, layerAt("exports/daily", configDir))
      yield* sink.put("a.csv", encode("id\n1\n"), "text/csv")
      expect(readFileSync(join(configDir, "exports", "daily", "a.csv"), "utf8")).toBe("id\n1\n")
      expect(sink.label).toBe("Local(exports/daily)")
      expect(sink.uri()).toBe(`file://${join(configDir, "exports", "daily")}`)
      expect(sink.uri("x/a.csv")).toBe(`file://${join(configDir, "exports", "daily", "x", "a.csv")}`)
    })
  )

  it("rejects empty paths in the config, accepts absolute and parent-relative ones", () => {
    const decode = Schema.decodeUnknownEither(LocalConfig, { onExcessProperty: "error" })
    expect(Either.isLeft(decode({ path: "" }))).toBe(true)
    expect(decode({ path: "../output" })).toEqual(Either.right({ path: "../output" }))
    expect(decode({ path: "/var/exports" })).toEqual(Either.right({ path: "/var/exports" }))
    expect(decode({ path: "./out..data" })).toEqual(Either.right({ path: "./out..data" }))
    expect(Either.isLeft(decode({ path: "out", bucket: "x" }))).toBe(true)
  })

  it.effect("check creates the directory and leaves no probe file behind", () =>
    Effect.gen(function* () {
      const dir = join(base, "checked", "deep")
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      yield* sink.check
      expect(readdirSync(dir)).toEqual([])
    })
  )

  it.effect("a destination below a regular file fails with NotFound, naming the path", () =>
    Effect.gen(function* () {
      const sink = yield* Effect.provide(SinkDriver, layerAt(join(blocker, "below")))
      const error = yield* Effect.flip(sink.put("a.bin", encode("x"), "application/octet-stream"))
      expect(error.reason).toBe("NotFound")
      expect(error.message).toContain(blocker)
      expect(error.hint).toContain("directory")
    })
  )

  it.effect("writing over a directory fails with Conflict and leaves no temp file", () =>
    Effect.gen(function* () {
      const dir = join(base, "over-directory")
      mkdirSync(join(dir, "taken"), { recursive: true })
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      const error = yield* Effect.flip(sink.put("taken", encode("x"), "application/octet-stream"))
      expect(error.reason).toBe("Conflict")
      expect(readdirSync(dir)).toEqual(["taken"])
    })
  )

  // root bypasses directory permissions: as root the directory is made immutable (chattr +i) instead, which stops
  // root too. Where neither is possible the case is skipped with its reason; the EACCES/EPERM mapping itself is also
  // covered below without touching the file system.
  it.effect("a directory the process may not write to fails with PermissionDenied", (context) =>
    Effect.gen(function* () {
      const dir = join(base, "read-only")
      mkdirSync(dir)
      const denial = denyWrites(dir)
      if ("reason" in denial) return skipBecause(context, denial.reason)
      yield* Effect.gen(function* () {
        const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
        const error = yield* Effect.flip(sink.put("a.bin", encode("x"), "application/octet-stream"))
        expect(error.reason, denial.how).toBe("PermissionDenied")
        expect(error.message).toContain(`permission denied on ${dir}/.a.bin.tmp-`)
        expect(error.hint).toContain(dir)
      }).pipe(Effect.ensuring(Effect.sync(denial.undo)))
      expect(readdirSync(dir)).toEqual([])
    })
  )

  it("refuses {date}/{export}/{table} placeholders instead of creating a literal '{date}' directory", () => {
    const decode = Schema.decodeUnknownEither(LocalConfig, { onExcessProperty: "error" })
    for (const path of ["./out/{date}", "./out/{export}/", "/data/{table}/x", "out/{run_id}", "out/{partition}"]) {
      const result = decode({ path })
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) expect(String(result.left)).toMatch(/does not expand/)
    }
    expect(decode({ path: "./out/{other}" })).toEqual(Either.right({ path: "./out/{other}" }))
  })

  it("maps permission, disk-full and busy errors to actionable SinkErrors", () => {
    const map = (code: string) =>
      fsError({ operation: "put", action: "create a temp file", path: "/data/out/.a.tmp-1", key: "a" })(
        Object.assign(new Error(code), { code })
      )
    expect(map("EACCES")).toMatchObject({ reason: "PermissionDenied", retryable: false, key: "a" })
    expect(map("EACCES").hint).toContain("/data/out")
    expect(map("ENOSPC")).toMatchObject({ reason: "Unavailable", retryable: false })
    expect(map("ENOSPC").hint).toContain("free space on that file system (see df -h /data/out)")
    expect(map("EROFS").reason).toBe("PermissionDenied")
    expect(map("EMFILE")).toMatchObject({ reason: "Unavailable", retryable: true })
    expect(map("EWHATEVER")).toMatchObject({ reason: "Unknown", retryable: false })
    expect(map("ENOSPC").message).toBe(
      "cannot create a temp file: the disk is full: no space left on the file system holding /data/out (ENOSPC)"
    )
    expect(map("EDQUOT")).toMatchObject({ reason: "Unavailable", retryable: false })
    expect(map("EDQUOT").message).toContain("disk quota is exhausted on the file system holding /data/out (EDQUOT)")
  })

  it.effect("list shows every file with its size (temp files too); read streams a file back", () =>
    Effect.gen(function* () {
      const dir = join(base, "listing")
      const sink = yield* Effect.provide(SinkDriver, layerAt(dir))
      expect(yield* sink.list!).toEqual([])
      yield* sink.put("b/nested.txt", encode("hello"), "text/plain")
      yield* sink.put("a.txt", new Uint8Array(600_000).fill(1), "text/plain")
      const open = yield* sink.begin("c.bin", "application/octet-stream")
      yield* open.writeBlock(0, encode("xy"))
      const listed = yield* sink.list!
      expect(listed.map((o) => o.key)).toEqual([
        expect.stringMatching(/^\.c\.bin\.tmp-/),
        "a.txt",
        "b/nested.txt"
      ])
      expect(listed.find((o) => o.key === "a.txt")?.size).toBe(600_000)
      const chunks = yield* Stream.runCollect(sink.read!("a.txt"))
      expect(Chunk.reduce(chunks, 0, (n, c) => n + c.length)).toBe(600_000)
      const missing = yield* Effect.flip(Stream.runDrain(sink.read!("nope.txt")))
      expect(missing.reason).toBe("NotFound")
      yield* open.abort
    })
  )
})
