import * as Cause from "effect/Cause"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  ConfigError,
  defectDetail,
  describeCause,
  FormatError,
  IntegrityError,
  PluginError,
  type RivetError,
  SchemaDriftError,
  SinkError,
  SourceError,
  StateError,
  TableCommitError
} from "../../core/errors.js"
import { guardedPluginError } from "../plugin-guard.js"

/** Every tagged error, as a schema: a worker sends the encoded form and the main thread rebuilds the class. */
export const AnyRivetError = Schema.Union(
  ConfigError,
  SourceError,
  FormatError,
  SinkError,
  IntegrityError,
  StateError,
  PluginError,
  SchemaDriftError,
  TableCommitError
)

const laneFailure = (exportName: string, message: string, defect?: unknown): PluginError =>
  new PluginError({
    plugin: "rivet",
    message: `export '${exportName}': ${message}`,
    hint: "this is a bug in a plugin or in Rivet; RIVET_LANES=0 runs chunks in the main thread (run with --verbose for details)",
    ...defectDetail(defect)
  })

/**
 * A worker's failure as a tagged error that can cross the thread boundary: its own, or — for a defect (something
 * threw) — a PluginError with the thrown message, like the main thread reports defects.
 */
export const laneError = (exportName: string, cause: Cause.Cause<RivetError>): RivetError => {
  const error = Option.getOrElse(Cause.failureOption(cause), () => {
    const guarded = guardedPluginError(cause)
    if (guarded !== undefined) return guarded
    const defect = Cause.squash(cause)
    return laneFailure(exportName, `a worker thread failed unexpectedly: ${describeCause(defect)}`, defect)
  })
  return Either.isRight(Schema.encodeEither(AnyRivetError)(error)) ? error : laneFailure(exportName, error.message)
}

/** The tagged error a worker sent as plain data, as an instance of its class again. */
export const decodeError = (exportName: string, encoded: unknown): RivetError =>
  Either.getOrElse(Schema.decodeUnknownEither(AnyRivetError)(encoded), () =>
    laneFailure(exportName, `a worker thread reported an unreadable error: ${describeCause(encoded)}`)
  )

/** A worker thread that stopped on its own (crashed, out of memory) or could not be reached. */
export const workerLost = (exportName: string, reason: string): PluginError =>
  laneFailure(exportName, `a chunk worker thread stopped: ${reason}`)
