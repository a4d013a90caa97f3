import type * as Effect from "effect/Effect"
import type { TableCommitError } from "../../../core/errors.js"
import type { TableMetadata } from "../iceberg/metadata.js"

/** A table's current metadata as its catalog points to it. */
export interface TableHead {
  readonly metadata: TableMetadata
  /** The metadata file's key at the table location. */
  readonly key: string
}

/** Where a table's current metadata is registered, and the one atomic step of a commit: moving that pointer. */
export interface Catalog {
  /** For messages and `rivet doctor`: `file-system catalog`, `SQL catalog rivet (postgres)`. */
  readonly label: string
  /** The table's current metadata, or undefined before its first commit. */
  readonly load: Effect.Effect<TableHead | undefined, TableCommitError>
  /**
   * Makes `bytes` the table's metadata if `head` is still its current one: `false` when another writer committed
   * first (nothing of this commit is then current; the caller reloads and tries again).
   */
  readonly commit: (head: TableHead | undefined, bytes: Uint8Array) => Effect.Effect<{ readonly key: string } | false, TableCommitError>
  /** Reachability (for `rivet doctor`). */
  readonly check: Effect.Effect<string, TableCommitError>
}
