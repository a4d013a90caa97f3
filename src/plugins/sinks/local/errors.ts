import { dirname } from "node:path"
import { describeCause, SinkError } from "../../../core/errors.js"
import type { SinkErrorReason } from "../../../core/errors.js"

const PLUGIN = "local"

interface Mapped {
  readonly reason: SinkErrorReason
  readonly retryable: boolean
  readonly message: string
  readonly hint?: string
}

export const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/**
 * A rejection handler for a file-system promise: what `recover` gives when the failure carries one of `codes`
 * (ENOENT of a file already gone, EEXIST of a directory already made), the failure itself otherwise.
 */
export const recoverFrom =
  <A>(codes: ReadonlyArray<string>, recover: () => A | Promise<A>) =>
  (cause: unknown): Promise<A> =>
    codes.includes(codeOf(cause) ?? "") ? Promise.resolve(recover()) : Promise.reject(cause)

const classify = (code: string | undefined, path: string, cause: unknown): Mapped => {
  const dir = dirname(path)
  switch (code) {
    case "EACCES":
    case "EPERM":
      return {
        reason: "PermissionDenied",
        retryable: false,
        message: `permission denied on ${path}`,
        hint: `check that the user running rivet may create and write files in ${dir} (directory permissions and ownership)`
      }
    case "EROFS":
      return {
        reason: "PermissionDenied",
        retryable: false,
        message: `${path} is on a read-only file system (EROFS)`,
        hint: "choose a destination path on a writable file system"
      }
    // Permanent: a full disk does not drain within a retry's backoff, and each attempt would first fill it again.
    case "ENOSPC":
      return {
        reason: "Unavailable",
        retryable: false,
        message: `the disk is full: no space left on the file system holding ${dir} (ENOSPC)`,
        hint: `free space on that file system (see df -h ${dir}) or point the destination at another disk, then run the export again`
      }
    case "EDQUOT":
      return {
        reason: "Unavailable",
        retryable: false,
        message: `the disk quota is exhausted on the file system holding ${dir} (EDQUOT)`,
        hint: "free space or raise the quota of the user running rivet (see quota -s), or point the destination at another disk, then run the export again"
      }
    case "ENOENT":
      return {
        reason: "NotFound",
        retryable: false,
        message: `${path} does not exist`,
        hint: `check that ${dir} exists and was not removed while rivet was writing`
      }
    case "ENOTDIR":
    case "EEXIST":
      return {
        reason: "NotFound",
        retryable: false,
        message: `a part of ${path} is a file where a directory is needed`,
        hint: "the destination path must be a directory or not exist yet; move the file that is in the way"
      }
    case "EISDIR":
      return {
        reason: "Conflict",
        retryable: false,
        message: `${path} is a directory, so a file cannot be written there`,
        hint: "remove or rename the directory, or choose another destination path"
      }
    case "ENAMETOOLONG":
      return { reason: "Unknown", retryable: false, message: `the file name ${path} is too long` }
    case "EMFILE":
    case "ENFILE":
      return {
        reason: "Unavailable",
        retryable: true,
        message: `too many open files while writing ${path}`,
        hint: "raise the open-file limit (ulimit -n) or run fewer exports at once"
      }
    case "EAGAIN":
    case "EBUSY":
    case "EINTR":
      return { reason: "Unavailable", retryable: true, message: `${path} is busy (${code})` }
    case "EIO":
      return {
        reason: "Unavailable",
        retryable: false,
        message: `input/output error on ${path}`,
        hint: "the disk or network file system reported a hardware or transport error; check the system logs"
      }
    default:
      return {
        reason: "Unknown",
        retryable: false,
        message: `${path}: ${describeCause(cause)}`
      }
  }
}

/** What was being done when a file-system call failed. */
export interface FsFailure {
  /** The driver operation (`put`, `writeBlock`, …), for the error's `operation` field. */
  readonly operation: string
  /** What was attempted, in words: `create the directory`, `rename the temp file into place`. */
  readonly action: string
  readonly path: string
  readonly key?: string | undefined
}

/** Maps a Node file-system failure to a SinkError naming the path and, where it helps, what to do. */
export const fsError =
  ({ operation, action, path, key }: FsFailure) =>
  (cause: unknown): SinkError => {
    const mapped = classify(codeOf(cause), path, cause)
    return new SinkError({
      plugin: PLUGIN,
      operation,
      ...(key === undefined ? {} : { key }),
      reason: mapped.reason,
      retryable: mapped.retryable,
      message: `cannot ${action}: ${mapped.message}`,
      ...(mapped.hint === undefined ? {} : { hint: mapped.hint }),
      cause
    })
  }

/**
 * The caller broke the upload protocol: a bad key or block (reason `Unknown`), or a use after abort or
 * complete (`Conflict`). Never retryable: the same call would fail again.
 */
export const protocolError = (
  operation: string,
  message: string,
  key?: string,
  reason: SinkErrorReason = "Conflict"
): SinkError =>
  new SinkError({
    plugin: PLUGIN,
    operation,
    ...(key === undefined ? {} : { key }),
    reason,
    retryable: false,
    message
  })
