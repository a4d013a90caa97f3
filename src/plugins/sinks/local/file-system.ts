import type { FileHandle } from "node:fs/promises"
import { rename } from "node:fs/promises"
import * as Context from "effect/Context"

/**
 * The steps of making a written file durable under its final name, whose order is the sink's guarantee: the file's
 * data is flushed before the rename, the directory after it (a crash then leaves the old name or the whole new
 * file, never a named file with missing data). A reference with Node's file system as its default, so the sink
 * needs nothing provided; a test provides a recording one to check the order.
 */
export interface LocalFileSystemShape {
  /** fsync of an open file or directory; `path` names it. */
  readonly sync: (handle: FileHandle, path: string) => Promise<void>
  /** Renames `from` onto `to` (atomic within one file system). */
  readonly rename: (from: string, to: string) => Promise<void>
}

export const nodeLocalFileSystem: LocalFileSystemShape = {
  sync: (handle) => handle.sync(),
  rename: (from, to) => rename(from, to)
}

export class LocalFileSystem extends Context.Reference<LocalFileSystem>()("rivet/sinks/local/LocalFileSystem", {
  defaultValue: (): LocalFileSystemShape => nodeLocalFileSystem
}) {}
