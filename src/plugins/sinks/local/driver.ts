import type { Dirent } from "node:fs"
import { open, readdir, stat, unlink } from "node:fs/promises"
import { basename, join, resolve } from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { SinkError } from "../../../core/errors.js"
import { SinkDriver } from "../../../core/plugin.js"
import type { PluginContext, SinkDriverShape, StoredObject } from "../../../core/plugin.js"
import * as Sink from "../../../core/sink/index.js"
import type { LocalConfig } from "./config.js"
import { fsError, recoverFrom } from "./errors.js"
import { ensureDirectory, isAbandonedTempFile, openTempFile } from "./temp-file.js"
import type { TempFile } from "./temp-file.js"

/**
 * 1 MiB blocks, two in flight: positional writes of 1 MiB reach ~1 GiB/s with two writers on the
 * measurement box (one writer: ~650 MiB/s; larger blocks or more writers add nothing), far above what an
 * export produces, while the runtime holds at most 2 MiB per object.
 */
export const LOCAL_BLOCK_SIZE = 1024 * 1024
export const LOCAL_CONCURRENCY = 2

const READ_CHUNK = 256 * 1024

/** The destination directory: the configured path, relative to the config file's directory. */
export const resolveRoot = (config: LocalConfig, context: PluginContext): string =>
  resolve(context.configDir, config.path)

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

    const pathOf = (key: string) => join(root, ...key.split("/"))

    /** Opens a temp file that is discarded when the layer closes unless it was settled before. */
    const openTracked = (operation: string, key: string): Effect.Effect<TempFile, SinkError> =>
      openTempFile({ target: pathOf(key), key, operation }).pipe(
        Effect.map((temp): TempFile => {
          open_.add(temp)
          const untrack = Effect.sync(() => {
            if (temp.settled()) open_.delete(temp)
          })
          return {
            ...temp,
            commit: (size, operation) => temp.commit(size, operation).pipe(Effect.ensuring(untrack)),
            commitNew: (size, operation) => temp.commitNew(size, operation).pipe(Effect.ensuring(untrack)),
            discard: temp.discard.pipe(Effect.ensuring(untrack))
          }
        }),
        Effect.uninterruptible
      )

    const listDirectory = (dir: string, prefix: string): Effect.Effect<Array<StoredObject>, SinkError> =>
      Effect.tryPromise({
        try: () => readdir(dir, { withFileTypes: true }).catch(recoverFrom(["ENOENT"], (): Array<Dirent> => [])),
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
                try: () => stat(path).catch(recoverFrom(["ENOENT"], () => undefined)),
                catch: fsError({ operation: "list", action: "read the file size", path, key })
              }).pipe(Effect.map((info) => (info?.isFile() ? [{ key, size: info.size }] : [])))
            },
            { concurrency: 8 }
          )
        ),
        Effect.map((nested) => nested.flat())
      )

    const unlinkObject = (operation: "check" | "sweep", key: string, action: string) =>
      Effect.tryPromise({
        try: () => unlink(pathOf(key)).catch(recoverFrom(["ENOENT"], () => undefined)),
        catch: fsError({ operation, action, path: pathOf(key), key })
      })

    return Sink.make({
      spanPrefix: "LocalSink",
      label: `Local(${config.path})`,
      uri: (key) => (key === undefined ? `file://${root}` : `file://${pathOf(key)}`),
      capabilities: { markers: true, blockSize: LOCAL_BLOCK_SIZE, concurrency: LOCAL_CONCURRENCY, releasesBytes: true },
      usageError: Sink.usageErrors("local", (problem) => ({
        ...problem,
        message: `${problem.operation} ${problem.key}: ${problem.message}`
      })),
      check: ensureDirectory(root, "check"),
      probe: { remove: (key) => unlinkObject("check", key, "delete the probe file") },

      put: (key, bytes) =>
        Effect.acquireUseRelease(
          openTracked("put", key),
          (temp) => temp.writeAt(0, bytes, "put").pipe(Effect.zipRight(temp.commit(bytes.length, "put"))),
          // A no-op after commit; after a failure it removes the temp file.
          (temp) => Effect.ignore(temp.discard)
        ),

      create: (key, bytes) =>
        Effect.acquireUseRelease(
          openTracked("create", key),
          (temp) => temp.writeAt(0, bytes, "create").pipe(Effect.zipRight(temp.commitNew(bytes.length, "create"))),
          (temp) => Effect.ignore(temp.discard)
        ),

      readRange: (key, offset, length) => {
        const path = pathOf(key)
        return Effect.acquireUseRelease(
          Effect.tryPromise({ try: () => open(path, "r"), catch: fsError({ operation: "readRange", action: "open the file", path, key }) }),
          (handle) =>
            Effect.tryPromise({
              try: async () => {
                const buffer = new Uint8Array(length)
                const { bytesRead } = await handle.read(buffer, 0, length, offset)
                return buffer.subarray(0, bytesRead)
              },
              catch: fsError({ operation: "readRange", action: "read the file", path, key })
            }),
          (handle) => Effect.promise(() => handle.close().catch(() => undefined))
        )
      },

      // Positional writes: a retried block lands where it did before, and blocks may come in any order.
      begin: (key) =>
        openTracked("begin", key).pipe(
          Effect.map((temp) => ({
            writePart: (index: number, bytes: Uint8Array) => temp.writeAt(index * LOCAL_BLOCK_SIZE, bytes, "writeBlock"),
            complete: (_receipts: ReadonlyArray<void>, size: number) => temp.commit(size, "complete"),
            abort: temp.discard
          }))
        ),

      sweep: listDirectory(root, "").pipe(
        Effect.map((objects) => objects.filter((object) => isAbandonedTempFile(basename(object.key)))),
        Effect.tap((abandoned) =>
          Effect.forEach(abandoned, ({ key }) => unlinkObject("sweep", key, "delete an abandoned temp file"), {
            discard: true
          })
        ),
        Effect.map((abandoned) => abandoned.map(({ key }) => key))
      ),

      list: listDirectory(root, "").pipe(
        Effect.map((objects) => objects.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)))
      ),

      read: (key) =>
        Stream.unwrapScoped(
          Effect.gen(function* () {
            const path = pathOf(key)
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
    })
  })

/** The `local` sink as a layer. */
export const localLayer = (config: LocalConfig, context: PluginContext): Layer.Layer<SinkDriver, SinkError> =>
  Layer.scoped(SinkDriver, makeLocalDriver(config, context))
