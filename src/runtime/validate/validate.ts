import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ExportConfig, RivetConfig } from "../config/model.js"
import { describeCause, PluginError, type RivetError, type SinkError } from "../errors.js"
import { MANIFEST_KEY, SUCCESS_KEY } from "../naming.js"
import { FormatDriver, type FormatDriverShape, SinkDriver, type SinkDriverShape } from "../plugin.js"
import { DEFAULT_RETRY_POLICY, type RetryPolicy, withRetry } from "../retry.js"
import { exportLayer, selectExports } from "../run.js"
import { type ExportValidation, type Finding, finding } from "./findings.js"
import { checkManifest, checkSuccessMarker, type StoredManifest } from "./manifest-check.js"
import { checkPart } from "./parts.js"

export interface ValidateOptions {
  /** Warnings (untracked objects, what could not be verified) fail too. */
  readonly strict?: boolean | undefined
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly retry?: RetryPolicy
}

/** The outcome of validating one export: its findings, or the error that stopped the check (e.g. no access). */
export type ExportValidationResult =
  | { readonly _tag: "validated"; readonly validation: ExportValidation }
  | { readonly _tag: "error"; readonly exportName: string; readonly error: RivetError }

/** Parts read at once: reading is I/O-bound on remote stores, hashing is cheap. */
const PART_CONCURRENCY = 4
/** Larger marker files are not Rivet's; they are reported without being read into memory. */
const MAX_MANIFEST_BYTES = 64 * 1024 * 1024
const MAX_SUCCESS_BYTES = 1024

const readAll = (read: (key: string) => Stream.Stream<Uint8Array, SinkError>, key: string) =>
  Stream.runCollect(read(key)).pipe(Effect.map((chunks) => Buffer.concat([...chunks])))

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")

/**
 * Data objects of this export (named `{export}_{YYYYMMDD}_…` or `{export}_{YYYYMMDD}T…` with the format's
 * extension) that the manifest does not list. Temp files start with a dot and markers have other names, so neither
 * can match.
 */
const untrackedObjects = (
  spec: ExportConfig,
  format: FormatDriverShape,
  manifest: StoredManifest,
  keys: ReadonlyArray<string>,
  strict: boolean
): ReadonlyArray<Finding> => {
  const named = new RegExp(`^${escapeRegExp(spec.name)}_(\\d{4})(\\d{2})(\\d{2})[_T](\\d{2})(\\d{2})(\\d{2})`)
  const listed = new Set(manifest.parts.map((part) => part.path))
  const runStart = Math.floor(Date.parse(manifest.started_at) / 1000) * 1000
  return keys.flatMap((key) => {
    const match = named.exec(key)
    if (match === null || !key.endsWith(`.${format.extension}`) || listed.has(key)) return []
    const [, year, month, day, hour, minute, second] = match.map(Number)
    const namedAt = Date.UTC(year!, month! - 1, day!, hour!, minute!, second!)
    const origin =
      namedAt < runStart
        ? "named before the run in the manifest started: most likely a part of an earlier run"
        : "named during the run in the manifest: an extra copy left by a failed or retried write (delivery is at-least-once)"
    return [finding("UNTRACKED_OBJECT", key, `not listed in ${MANIFEST_KEY} (${origin})`, strict)]
  })
}

/** Validates what one export wrote, with its format and sink drivers provided. */
const validateWithDrivers = (
  spec: ExportConfig,
  format: FormatDriverShape,
  sink: SinkDriverShape,
  options: ValidateOptions
): Effect.Effect<ExportValidation, SinkError> =>
  Effect.gen(function* () {
    const strict = options.strict ?? false
    const retry = options.retry ?? DEFAULT_RETRY_POLICY
    const result = (findings: ReadonlyArray<Finding>, manifest?: StoredManifest, verifiable = true): ExportValidation => ({
      exportName: spec.name,
      uri: sink.uri(),
      verifiable,
      parts: manifest?.parts.length ?? 0,
      rows: manifest?.row_count ?? 0,
      findings
    })
    const { list, read } = sink
    if (!sink.capabilities.markers || list === undefined || read === undefined) {
      const message = `the ${spec.destination.plugin.type} destination keeps no manifest or cannot be read back: nothing to validate`
      return result([finding("NOT_VERIFIED", sink.uri(), message, strict)], undefined, false)
    }
    const retried = <A>(effect: Effect.Effect<A, SinkError>) => withRetry(effect, retry, () => {})
    const objects = yield* retried(list)
    const listing = new Map(objects.map((object) => [object.key, object.size]))

    const manifestSize = listing.get(MANIFEST_KEY)
    if (manifestSize === undefined) {
      const message = `not found at ${sink.uri()}: the export has not completed a run here, or the manifest was deleted`
      return result([finding("MANIFEST_MISSING", MANIFEST_KEY, message, strict)])
    }
    if (manifestSize > MAX_MANIFEST_BYTES) {
      return result([finding("MANIFEST_INVALID", MANIFEST_KEY, `${manifestSize} bytes: not a manifest Rivet wrote`, strict)])
    }
    const manifestBytes = yield* retried(readAll(read, MANIFEST_KEY))
    const findings: Array<Finding> = []

    const successSize = listing.get(SUCCESS_KEY)
    if (successSize === undefined) {
      const message = `not found: the run that wrote ${MANIFEST_KEY} did not finish, or the marker was deleted`
      findings.push(finding("SUCCESS_MISSING", SUCCESS_KEY, message, strict))
    } else if (successSize > MAX_SUCCESS_BYTES) {
      findings.push(finding("SUCCESS_MALFORMED", SUCCESS_KEY, `${successSize} bytes, expected sha256:<hex> and a newline`, strict))
    } else {
      findings.push(...checkSuccessMarker(yield* retried(readAll(read, SUCCESS_KEY)), manifestBytes, strict))
    }

    const checked = checkManifest(manifestBytes, spec.name, strict)
    findings.unshift(...checked.findings)
    const manifest = checked.manifest
    if (manifest === undefined) return result(findings)

    let countRows = format.countRows
    if (manifest.format !== spec.format.plugin.type) {
      countRows = undefined
      const message = `rows not counted: the manifest's parts are ${manifest.format} but the config now says ${spec.format.plugin.type}`
      findings.push(finding("NOT_VERIFIED", MANIFEST_KEY, message, strict))
    } else if (countRows === undefined) {
      const message = `rows not counted: the ${spec.format.plugin.type} format cannot count the rows of a stored part`
      findings.push(finding("NOT_VERIFIED", MANIFEST_KEY, message, strict))
    }
    const context = { listing, read, countRows, retry, strict }
    const perPart = yield* Effect.forEach(manifest.parts, (part) => checkPart(part, context), {
      concurrency: PART_CONCURRENCY
    })
    findings.push(...perPart.flat())
    findings.push(...untrackedObjects(spec, format, manifest, [...listing.keys()], strict))
    return result(findings, manifest)
  })

/**
 * Validates what one export's destination holds against its `manifest.json` (docs/validate.md): the markers, every
 * listed part (present, size, sha256 re-read, row count from the file) and data objects the manifest does not list.
 * Fails only when the destination cannot be checked at all (unreachable, no permission).
 */
export const validateExport = Effect.fn("Rivet.validateExport")(function* (
  config: RivetConfig,
  spec: ExportConfig,
  options: ValidateOptions = {}
) {
  const validation = Effect.gen(function* () {
    return yield* validateWithDrivers(spec, yield* FormatDriver, yield* SinkDriver, options)
  })
  return yield* validation.pipe(
    Effect.provide(exportLayer(config, spec, options.env)),
    Effect.catchAllDefect((defect) =>
      Effect.fail(
        new PluginError({
          plugin: `${spec.format.plugin.type}/${spec.destination.plugin.type}`,
          message: `validating export '${spec.name}' failed unexpectedly: ${describeCause(defect)}`,
          hint: "this is a bug in a plugin or in Rivet; run with --verbose for details"
        })
      )
    )
  )
})

/** Validates the selected exports (all by default) one after another; one export's error does not stop the rest. */
export const validateConfig = Effect.fn("Rivet.validateConfig")(function* (
  config: RivetConfig,
  options: ValidateOptions & { readonly only?: ReadonlyArray<string> | undefined } = {}
) {
  const selected = yield* selectExports(config, options.only)
  return yield* Effect.forEach(selected, (spec) =>
    validateExport(config, spec, options).pipe(
      Effect.match({
        onSuccess: (validation): ExportValidationResult => ({ _tag: "validated", validation }),
        onFailure: (error): ExportValidationResult => ({ _tag: "error", exportName: spec.name, error })
      })
    )
  )
})
