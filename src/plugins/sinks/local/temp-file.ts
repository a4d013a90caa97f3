import { randomBytes } from "node:crypto"
import type { FileHandle } from "node:fs/promises"
import { link, mkdir, open, stat, unlink } from "node:fs/promises"
import { basename, dirname, join } from "node:path"
import * as Effect from "effect/Effect"
import type { SinkError } from "../../../core/errors.js"
import type { CreateOutcome } from "../../../core/plugin.js"
import { codeOf, fsError, protocolError, recoverFrom } from "./errors.js"
import { LocalFileSystem, type LocalFileSystemShape } from "./file-system.js"

/** Prefix shared by every temp file: `.<name>.tmp-<pid>-<random>` beside the target. */
export const tempFileMarker = ".tmp-"

/**
 * The temp-file path for a target: a dot-file in the same directory, so the final rename is atomic. The writer's
 * process id is part of the name so a later run can tell the leftovers of a killed process from live writes.
 */
export const tempPathFor = (target: string): string =>
  // 200 leaves room for the dot and suffix within the usual 255-byte name limit.
  join(
    dirname(target),
    `.${basename(target).slice(0, 200)}${tempFileMarker}${process.pid}-${randomBytes(6).toString("hex")}`
  )

const TEMP_NAME = /^\..+\.tmp-(\d+)-[0-9a-f]{12}$/

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    // EPERM: the process exists but belongs to someone else.
    return codeOf(cause) === "EPERM"
  }
}

/**
 * True for a temp file whose writer is no longer running on this machine (killed mid-write: SIGKILL, OOM, power
 * loss). Temp files of live processes — another Rivet writing to the same directory — are never touched.
 */
export const isAbandonedTempFile = (name: string): boolean => {
  const match = TEMP_NAME.exec(name)
  return match !== null && Number(match[1]) !== process.pid && !isAlive(Number(match[1]))
}

/** Creates `dir` and its missing parents one level at a time, so a failure carries its own error code. */
const mkdirStepwise = async (dir: string): Promise<void> => {
  const parent = dirname(dir)
  if (parent !== dir) {
    await stat(parent).catch(recoverFrom(["ENOENT"], () => mkdirStepwise(parent)))
  }
  await mkdir(dir).catch(recoverFrom(["EEXIST"], () => undefined))
}

/**
 * `mkdir -p`. Node's recursive mkdir reports some failures as ENOENT (EROFS on a read-only file system among
 * them), which would tell the user a directory is missing; on ENOENT it is redone level by level for the real cause.
 */
export const ensureDirectory = (dir: string, operation: string, key?: string): Effect.Effect<void, SinkError> =>
  Effect.tryPromise({
    try: () => mkdir(dir, { recursive: true }).catch(recoverFrom(["ENOENT"], () => mkdirStepwise(dir))),
    catch: fsError({ operation, action: "create the directory", path: dir, key })
  })

/** Flushes a directory entry (the rename) to disk; without it a crash can forget a completed rename. */
export const syncDirectory = (dir: string, operation: string, key?: string): Effect.Effect<void, SinkError> =>
  Effect.flatMap(LocalFileSystem, (files) => flushDirectory(files, dir, operation, key))

const flushDirectory = (files: LocalFileSystemShape, dir: string, operation: string, key?: string): Effect.Effect<void, SinkError> =>
  process.platform === "win32"
    ? Effect.void // Windows cannot open a directory for fsync; NTFS journals the rename itself.
    : Effect.acquireUseRelease(
        Effect.tryPromise({
          try: () => open(dir, "r"),
          catch: fsError({ operation, action: "open the directory to flush it", path: dir, key })
        }),
        (handle) =>
          Effect.tryPromise({
            try: () => files.sync(handle, dir),
            catch: fsError({ operation, action: "flush the directory", path: dir, key })
          }),
        (handle) => Effect.promise(() => handle.close().catch(() => undefined))
      )

/**
 * One object being written to `.<name>.tmp-<random>`. `commit` makes it visible under the target name;
 * `discard` removes it. Both are idempotent and uninterruptible, and after either the file handle is closed.
 */
export interface TempFile {
  readonly path: string
  /** Positional write: safe to repeat and to run for several ranges at once. */
  readonly writeAt: (position: number, bytes: Uint8Array, operation: string) => Effect.Effect<void, SinkError>
  /** Truncates to `size`, fsyncs, closes, renames onto the target and fsyncs the directory. */
  readonly commit: (size: number, operation: string) => Effect.Effect<void, SinkError>
  /**
   * Like `commit`, but only when no file has the target name (a hard link, then the temp file removed): `exists`
   * when one has, and the temp file is removed all the same.
   */
  readonly commitNew: (size: number, operation: string) => Effect.Effect<CreateOutcome, SinkError>
  /** Closes and deletes the temp file; a no-op after commit or a previous discard. */
  readonly discard: Effect.Effect<void, SinkError>
  /** True once committed or discarded. */
  readonly settled: () => boolean
}

/**
 * Opens a fresh temp file beside the target, creating the target's directory when it is missing (only then: a
 * partitioned export writes thousands of parts into directories that mostly exist).
 */
export const openTempFile = (options: {
  readonly target: string
  readonly key: string
  readonly operation: string
}): Effect.Effect<TempFile, SinkError> => {
  const { target, key, operation } = options
  const path = tempPathFor(target)
  const create = <A>(handle: () => Promise<A>) =>
    Effect.tryPromise({ try: handle, catch: fsError({ operation, action: "create a temp file", path, key }) })
  // ENOENT: the directory is missing; ENOTDIR: a file stands where it should be — ensureDirectory says which. A
  // missing directory is the first part of every new partition, so it is not turned into an error (with a stack).
  return create(() => open(path, "wx").catch(recoverFrom(["ENOENT", "ENOTDIR"], () => undefined))).pipe(
    Effect.flatMap((handle) =>
      handle !== undefined
        ? Effect.succeed(handle)
        : Effect.zipRight(ensureDirectory(dirname(target), operation, key), create(() => open(path, "wx")))
    ),
    Effect.flatMap((handle) => Effect.map(LocalFileSystem, (files) => makeTempFile(files, handle, path, target, key)))
  )
}

const makeTempFile = (files: LocalFileSystemShape, opened: FileHandle, path: string, target: string, key: string): TempFile => {
  let file: FileHandle | undefined = opened
  let phase: "writing" | "committed" | "discarded" = "writing"
  let renamed = false
  // The end of the furthest write: a file written exactly to its size needs no truncation.
  let written = 0

  const closeFile = Effect.suspend(() => {
    const handle = file
    file = undefined
    // A failed close still releases the descriptor on every platform Node supports.
    return handle === undefined ? Effect.void : Effect.promise(() => handle.close().catch(() => undefined))
  })

  const writeAt = (position: number, bytes: Uint8Array, operation: string): Effect.Effect<void, SinkError> =>
    Effect.suspend(() => {
      const handle = file
      if (phase !== "writing" || handle === undefined) {
        const state = phase === "writing" ? "being completed" : phase
        return Effect.fail(protocolError(operation, `cannot write ${key}: the upload is already ${state}`, key))
      }
      return Effect.tryPromise({
        try: async () => {
          let offset = 0
          while (offset < bytes.length) {
            const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, position + offset)
            offset += bytesWritten
          }
          written = Math.max(written, position + bytes.length)
        },
        catch: fsError({ operation, action: `write ${key}`, path, key })
      })
    })

  const flush = (size: number, operation: string): Effect.Effect<void, SinkError> =>
    Effect.suspend(() => {
      const handle = file
      return handle === undefined
        ? Effect.void
        : Effect.tryPromise({
            try: async () => {
              if (written !== size) await handle.truncate(size)
              await files.sync(handle, path)
            },
            catch: fsError({ operation, action: `flush ${key} to disk`, path, key })
          }).pipe(Effect.zipRight(closeFile))
    })

  const notWriting = (operation: string) =>
    phase === "discarded" ? Effect.fail(protocolError(operation, `the upload of ${key} was aborted and cannot complete`, key)) : undefined

  const commit = (size: number, operation: string): Effect.Effect<void, SinkError> =>
    Effect.suspend(() => {
      if (phase === "committed") return Effect.void
      const refused = notWriting(operation)
      if (refused !== undefined) return refused
      const moveIntoPlace = renamed
        ? Effect.void
        : Effect.tryPromise({
            try: () => files.rename(path, target),
            catch: fsError({ operation, action: "rename the temp file into place", path: target, key })
          }).pipe(Effect.tap(() => Effect.sync(() => (renamed = true))))
      return flush(size, operation).pipe(
        Effect.zipRight(moveIntoPlace),
        Effect.zipRight(flushDirectory(files, dirname(target), operation, key)),
        Effect.tap(() => Effect.sync(() => (phase = "committed")))
      )
    }).pipe(Effect.uninterruptible)

  // A hard link fails with EEXIST when the target exists, where a rename would replace it: create-if-absent.
  const commitNew = (size: number, operation: string): Effect.Effect<CreateOutcome, SinkError> =>
    Effect.suspend(() => {
      const refused = notWriting(operation)
      if (refused !== undefined) return refused
      const linkIntoPlace = Effect.tryPromise({
        try: () => link(path, target).then((): CreateOutcome => "created", recoverFrom(["EEXIST"], (): CreateOutcome => "exists")),
        catch: fsError({ operation, action: "link the temp file into place", path: target, key })
      })
      return flush(size, operation).pipe(
        Effect.zipRight(linkIntoPlace),
        Effect.tap(() => discard),
        Effect.tap((outcome) => (outcome === "created" ? flushDirectory(files, dirname(target), operation, key) : Effect.void))
      )
    }).pipe(Effect.uninterruptible)

  const discard: Effect.Effect<void, SinkError> = Effect.suspend(() => {
    if (phase !== "writing") return Effect.void
    phase = "discarded"
    // After the rename the object is already visible; like any committed part it stays (at-least-once).
    const remove = renamed
      ? Effect.void
      : Effect.tryPromise({
          try: () => unlink(path).catch(recoverFrom(["ENOENT"], () => undefined)),
          catch: fsError({ operation: "abort", action: "delete the temp file", path, key })
        })
    return closeFile.pipe(Effect.zipRight(remove))
  }).pipe(Effect.uninterruptible)

  return { path, writeAt, commit, commitNew, discard, settled: () => phase !== "writing" }
}
