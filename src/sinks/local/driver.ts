import type { Dirent } from "node:fs"
import { open, readdir, stat, unlink, writeFile } from "node:fs/promises"
import { basename, join, resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { SinkError } from "../../runtime/errors.js"
import { SinkDriver } from "../../runtime/plugin.js"
import type { PluginContext, SinkDriverShape, StoredObject, UploadHandle } from "../../runtime/plugin.js"
import type { LocalConfig } from "./config.js"
import { fsError, protocolError } from "./errors.js"
import { invalidKeyReason } from "../../runtime/keys.js"
import { ensureDirectory, isAbandonedTempFile, openTempFile } from "./temp-file.js"
import type { TempFile } from "./temp-file.js"

/**
 * 1 MiB blocks, two in flight: positional writes of 1 MiB reach ~1 GiB/s with two writers on the
 * measurement box (one writer: ~650 MiB/s; larger blocks or more writers add nothing), far above what an
 * export produces, while the runtime holds at most 2 MiB per object.
 */
export const LOCAL_BLOCK_SIZE = 1024 * 1024
export const LOCAL_CONCURRENCY = 2

/** The file `check` writes and deletes to prove write access (same name as rivet-rs). */
export const PROBE_FILE = ".rivet_doctor_probe"

const READ_CHUNK = 256 * 1024

/** The destination directory: the configured path, relative to the config file's directory. */
export const resolveRoot = (config: LocalConfig, context: PluginContext): string =>
  resolve(context.configDir, config.path)

/** What is wrong with the blocks written so far for `complete(blockCount)`, if anything. */
const blockLayoutProblem = (
  sizes: ReadonlyMap<number, number>,
  blockCount: number,
  blockSize: number
): string | undefined => {
  if (!Number.isSafeInteger(blockCount) || blockCount < 0) return `invalid block count ${blockCount}`
  for (const index of sizes.keys()) {
    if (index >= blockCount) return `block ${index} was written but the object has ${blockCount} blocks`
  }
  for (let index = 0; index < blockCount; index++) {
    const size = sizes.get(index)
    if (size === undefined) return `block ${index} of ${blockCount} was never written`
    if (index < blockCount - 1 && size !== blockSize) {
      return `block ${index} is ${size} bytes; every block but the last must be ${blockSize} bytes`
    }
  }
  return undefined
}

const makeUploadHandle = (temp: TempFile, key: string, blockSize: number): UploadHandle => {
  const sizes = new Map<number, number>()
  return {
    writeBlock: Effect.fn("LocalSink.writeBlock")(function* (index: number, bytes: Uint8Array) {
      if (!Number.isSafeInteger(index) || index < 0) {
        return yield* protocolError("writeBlock", `invalid block index ${index} for ${key}`, key, "Unknown")
      }
      if (bytes.length > blockSize) {
        const message = `block ${index} of ${key} is ${bytes.length} bytes, more than the block size ${blockSize}`
        return yield* protocolError("writeBlock", message, key, "Unknown")
      }
      yield* temp.writeAt(index * blockSize, bytes, "writeBlock")
      sizes.set(index, bytes.length)
    }),
    complete: Effect.fn("LocalSink.complete")(function* (blockCount: number) {
      if (!temp.settled()) {
        const problem = blockLayoutProblem(sizes, blockCount, blockSize)
        if (problem !== undefined) {
          return yield* protocolError("complete", `cannot complete ${key}: ${problem}`, key, "Unknown")
        }
      }
      const size = blockCount === 0 ? 0 : (blockCount - 1) * blockSize + (sizes.get(blockCount - 1) ?? 0)
      yield* temp.commit(size, "complete")
    }),
    abort: temp.discard.pipe(Effect.withSpan("LocalSink.abort"))
  }
}

const ignoreMissing = <A>(onMissing: A) => (cause: unknown): Promise<A> =>
  typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ENOENT"
    ? Promise.resolve(onMissing)
    : Promise.reject(cause)

/**
 * The local sink: every object is written to `.<name>.tmp-<random>` beside its target and renamed into place
 * once complete, so a reader never sees a partial file. Uploads still open when the layer's scope closes are
 * discarded.
 */
export const makeLocalDriver = (
  config: LocalConfig,
  context: PluginContext
): Effect.Effect<SinkDriverShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const root = resolveRoot(config, context)
    const open_ = new Set<TempFile>()
    yield* Effect.addFinalizer(() =>
      Effect.forEach([...open_], (temp) => Effect.ignore(temp.discard), { discard: true })
    )

    const targetOf = (operation: string, key: string): Effect.Effect<string, SinkError> => {
      const problem = invalidKeyReason(key)
      return problem === undefined
        ? Effect.succeed(join(root, ...key.split("/")))
        : Effect.fail(protocolError(operation, `invalid object key ${JSON.stringify(key)}: ${problem}`, key, "Unknown"))
    }

    /** Opens a temp file that is discarded when the layer closes unless it was settled before. */
    const openTracked = (operation: string, key: string): Effect.Effect<TempFile, SinkError> =>
      targetOf(operation, key).pipe(
        Effect.flatMap((target) => openTempFile({ target, key, operation })),
        Effect.map((temp): TempFile => {
          open_.add(temp)
          const untrack = Effect.sync(() => {
            if (temp.settled()) open_.delete(temp)
          })
          return {
            ...temp,
            commit: (size, operation) => temp.commit(size, operation).pipe(Effect.ensuring(untrack)),
            discard: temp.discard.pipe(Effect.ensuring(untrack))
          }
        }),
        Effect.uninterruptible
      )

    const listDirectory = (dir: string, prefix: string): Effect.Effect<Array<StoredObject>, SinkError> =>
      Effect.tryPromise({
        try: () => readdir(dir, { withFileTypes: true }).catch(ignoreMissing<Array<Dirent>>([])),
        catch: fsError({ operation: "list", action: "list the directory", path: dir })
      }).pipe(
        Effect.flatMap((entries) =>
          Effect.forEach(
            entries,
            (entry): Effect.Effect<Array<StoredObject>, SinkError> => {
              const path = join(dir, entry.name)
              const key = prefix + entry.name
              if (entry.isDirectory()) return listDirectory(path, `${key}/`)
              if (!entry.isFile() && !entry.isSymbolicLink()) return Effect.succeed([])
              return Effect.tryPromise({
                try: () => stat(path).catch(ignoreMissing(undefined)),
                catch: fsError({ operation: "list", action: "read the file size", path, key })
              }).pipe(Effect.map((info) => (info?.isFile() ? [{ key, size: info.size }] : [])))
            },
            { concurrency: 8 }
          )
        ),
        Effect.map((nested) => nested.flat())
      )

    const driver: SinkDriverShape = {
      label: `Local(${config.path})`,
      uri: (key) => (key === undefined ? `file://${root}` : `file://${join(root, ...key.split("/"))}`),
      capabilities: { markers: true, blockSize: LOCAL_BLOCK_SIZE, concurrency: LOCAL_CONCURRENCY },

      check: Effect.gen(function* () {
        yield* ensureDirectory(root, "check")
        const probe = join(root, PROBE_FILE)
        yield* Effect.tryPromise({
          try: () => writeFile(probe, "ok"),
          catch: fsError({ operation: "check", action: "write a probe file", path: probe })
        })
        yield* Effect.tryPromise({
          try: () => unlink(probe),
          catch: fsError({ operation: "check", action: "delete the probe file", path: probe })
        })
      }).pipe(Effect.withSpan("LocalSink.check")),

      put: Effect.fn("LocalSink.put")((key: string, bytes: Uint8Array, _contentType: string) =>
        Effect.acquireUseRelease(
          openTracked("put", key),
          (temp) => temp.writeAt(0, bytes, "put").pipe(Effect.zipRight(temp.commit(bytes.length, "put"))),
          // A no-op after commit; after a failure it removes the temp file.
          (temp) => Effect.ignore(temp.discard)
        )
      ),

      begin: Effect.fn("LocalSink.begin")((key: string, _contentType: string) =>
        openTracked("begin", key).pipe(Effect.map((temp) => makeUploadHandle(temp, key, LOCAL_BLOCK_SIZE)))
      ),

      sweep: listDirectory(root, "").pipe(
        Effect.map((objects) => objects.filter((object) => isAbandonedTempFile(basename(object.key)))),
        Effect.tap((abandoned) =>
          Effect.forEach(
            abandoned,
            ({ key }) =>
              Effect.tryPromise({
                try: () => unlink(join(root, ...key.split("/"))).catch(ignoreMissing(undefined)),
                catch: fsError({ operation: "sweep", action: "delete an abandoned temp file", path: join(root, key), key })
              }),
            { discard: true }
          )
        ),
        Effect.map((abandoned) => abandoned.map(({ key }) => key)),
        Effect.withSpan("LocalSink.sweep")
      ),

      list: listDirectory(root, "").pipe(
        Effect.map((objects) => objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))),
        Effect.withSpan("LocalSink.list")
      ),

      read: (key) =>
        Stream.unwrapScoped(
          Effect.gen(function* () {
            const path = yield* targetOf("read", key)
            const handle = yield* Effect.acquireRelease(
              Effect.tryPromise({
                try: () => open(path, "r"),
                catch: fsError({ operation: "read", action: "open the file", path, key })
              }),
              (handle) => Effect.promise(() => handle.close().catch(() => undefined))
            )
            let position = 0
            const nextChunk = Effect.tryPromise({
              try: async () => {
                const buffer = new Uint8Array(READ_CHUNK)
                const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, position)
                position += bytesRead
                return buffer.subarray(0, bytesRead)
              },
              catch: fsError({ operation: "read", action: "read the file", path, key })
            })
            return Stream.repeatEffectOption(
              nextChunk.pipe(
                Effect.mapError(Option.some),
                Effect.filterOrFail((chunk) => chunk.length > 0, () => Option.none())
              )
            )
          })
        )
    }
    return driver
  })

/** The `local` sink as a layer. */
export const localLayer = (config: LocalConfig, context: PluginContext): Layer.Layer<SinkDriver, SinkError> =>
  Layer.scoped(SinkDriver, makeLocalDriver(config, context))
