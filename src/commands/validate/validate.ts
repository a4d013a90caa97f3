import * as Effect from "effect/Effect"
import type { ExportConfig, RivetConfig } from "../../config/model.js"
import { ConfigError, describeCause, PluginError, type RivetError, type SinkError } from "../../core/errors.js"
import { KEPT_MANIFESTS_DIR, markerKeys } from "../../core/naming.js"
import { FormatDriver, type FormatDriverShape, SinkDriver, type SinkDriverShape } from "../../core/plugin.js"
import { DEFAULT_RETRY_POLICY, type RetryPolicy, withRetry } from "../../core/retry.js"
import { exportLayer, selectExports } from "../../engine/run.js"
import { type ExportValidation, type Finding, finding } from "./findings.js"
import { type FoundManifest, historyFindings, type HistoryContext, MAX_MANIFEST_BYTES, readAll, readHistory, selectRuns } from "./history.js"
import { checkSuccessMarker, manifestExportName, type StoredManifest } from "./manifest-check.js"
import { checkPart, type PartCheckContext } from "./parts.js"
import { tableFindings } from "./table.js"
import { untrackedObjects } from "./untracked.js"

export interface ValidateOptions {
  /** Warnings (untracked objects, what could not be verified) fail too. */
  readonly strict?: boolean | undefined
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly retry?: RetryPolicy
  /**
   * Re-read only the parts of these runs (`rivet validate --run`); the markers, the kept manifests and untracked
   * objects are checked all the same. Default: every kept run.
   */
  readonly runs?: ReadonlyArray<string> | undefined
}

/** The outcome of validating one export: its findings, or the error that stopped the check (e.g. no access). */
export type ExportValidationResult =
  | { readonly _tag: "validated"; readonly validation: ExportValidation }
  | { readonly _tag: "error"; readonly exportName: string; readonly error: RivetError }

/** Parts read at once: reading is I/O-bound on remote stores, hashing is cheap. */
const PART_CONCURRENCY = 4
const MAX_SUCCESS_BYTES = 1024

type StoredPart = StoredManifest["parts"][number]

/** `_SUCCESS` against the latest manifest's bytes. */
const checkSuccess = (context: HistoryContext, manifestBytes: Uint8Array) =>
  Effect.gen(function* () {
    const { keys, listing, strict } = context
    const size = listing.get(keys.success)
    if (size === undefined) {
      const message = `not found: the run that wrote ${keys.manifest} did not finish, or the marker was deleted`
      return [finding("SUCCESS_MISSING", keys.success, message, strict)]
    }
    if (size > MAX_SUCCESS_BYTES) {
      return [finding("SUCCESS_MALFORMED", keys.success, `${size} bytes, expected sha256:<hex> and a newline`, strict)]
    }
    return checkSuccessMarker(yield* context.retried(readAll(context.read, keys.success)), manifestBytes, keys, strict)
  })

/**
 * The manifest of the export's other layout (docs/cloud-destinations.md#markers), left from before another export
 * joined or left its destination: readers of that name see an old run for ever.
 */
const checkStaleMarker = (context: HistoryContext, shared: boolean) =>
  Effect.gen(function* () {
    const { exportName, listing, strict } = context
    const other = markerKeys(exportName, !shared)
    const size = listing.get(other.manifest)
    if (size === undefined || size > MAX_MANIFEST_BYTES) return []
    // manifest.json of a shared destination may be any export's: only its own export is told about it.
    if (shared && manifestExportName(yield* context.retried(readAll(context.read, other.manifest))) !== exportName) return []
    const now = shared
      ? `other exports now write to this destination too, so runs write ${context.keys.manifest} and ${context.keys.success}`
      : `the export now writes alone to this destination, so runs write ${context.keys.manifest} and ${context.keys.success}`
    const message = `left from an earlier layout: ${now}; a reader of ${other.manifest} sees an old run for ever — delete it and ${other.success} once no reader uses them`
    return [finding("STALE_MARKER", other.manifest, message, strict)]
  })

/** Checks every distinct part the selected manifests list; rows are counted only for parts in the config's format. */
const checkSelectedParts = (
  spec: ExportConfig,
  format: FormatDriverShape,
  selected: ReadonlyArray<FoundManifest>,
  context: Omit<PartCheckContext, "countRows">
) =>
  Effect.gen(function* () {
    const findings: Array<Finding> = []
    const parts = new Map<string, { readonly part: StoredPart; readonly counted: boolean }>()
    for (const found of selected) {
      const manifest = found.manifest
      if (manifest === undefined) continue
      const counted = manifest.format === spec.format.plugin.type && format.countRows !== undefined
      if (manifest.format !== spec.format.plugin.type) {
        const message = `rows not counted: the manifest's parts are ${manifest.format} but the config now says ${spec.format.plugin.type}`
        findings.push(finding("NOT_VERIFIED", found.key, message, context.strict))
      } else if (!counted) {
        const message = `rows not counted: the ${spec.format.plugin.type} format cannot count the rows of a stored part`
        findings.push(finding("NOT_VERIFIED", found.key, message, context.strict))
      }
      for (const part of manifest.parts) {
        const id = [part.path, part.size_bytes, part.content_fingerprint, part.rows].join("\0")
        if (!parts.has(id)) parts.set(id, { part, counted })
      }
    }
    const checked = yield* Effect.forEach(
      [...parts.values()],
      ({ part, counted }) => checkPart(part, { ...context, countRows: counted ? format.countRows : undefined }),
      { concurrency: PART_CONCURRENCY }
    )
    findings.push(...checked.flat())
    const runs = new Set(selected.flatMap((found) => (found.manifest ? [found.manifest.run_id ?? found.key] : [])))
    const rows = [...parts.values()].reduce((sum, { part }) => sum + part.rows, 0)
    return { findings, runs: runs.size, parts: parts.size, rows }
  })

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
    const shared = spec.sharedDestination === true
    const keys = markerKeys(spec.name, shared)
    const result = (
      findings: ReadonlyArray<Finding>,
      totals = { runs: 0, parts: 0, rows: 0 },
      verifiable = true
    ): ExportValidation => ({ exportName: spec.name, uri: sink.uri(), verifiable, ...totals, findings })
    const { list, read } = sink
    if (!sink.capabilities.markers || list === undefined || read === undefined) {
      const message = `the ${spec.destination.plugin.type} destination keeps no manifest or cannot be read back: nothing to validate`
      return result([finding("NOT_VERIFIED", sink.uri(), message, strict)], undefined, false)
    }
    const retried = <A>(effect: Effect.Effect<A, SinkError>) => withRetry(effect, retry, () => {})
    const objects = yield* retried(list)
    const listing = new Map(objects.map((object) => [object.key, object.size]))
    const context: HistoryContext = { exportName: spec.name, keys, listing, read, retried, strict }

    const history = yield* readHistory(context)
    const findings: Array<Finding> = [...history.findings]
    if (history.latest === undefined) {
      const message = `not found at ${sink.uri()}: the export has not completed a run here, or the manifest was deleted`
      findings.unshift(finding("MANIFEST_MISSING", keys.manifest, message, strict))
      if (history.kept.length === 0) return result(findings)
    } else if (listing.get(keys.manifest)! <= MAX_MANIFEST_BYTES) {
      findings.push(...(yield* checkSuccess(context, history.latest.bytes)))
    }
    findings.push(...historyFindings(history, keys, strict))
    findings.push(...(yield* checkStaleMarker(context, shared)))

    const { selected, findings: notFound } = selectRuns(history, keys, options.runs, strict)
    findings.push(...notFound)
    const checked = yield* checkSelectedParts(spec, format, selected, { listing, read, retry, strict })
    findings.push(...checked.findings)
    findings.push(...untrackedObjects({ exportName: spec.name, extension: format.extension, keys, strict }, history, [...listing.keys()]))
    if (spec.tableFormat !== undefined) findings.push(...(yield* tableFindings(spec.tableFormat, sink, listing, { retry, strict })).findings)
    return result(findings, { runs: checked.runs, parts: checked.parts, rows: checked.rows })
  })

/**
 * Validates what one export's destination holds against its manifests (docs/validate.md): the markers, the kept
 * manifests, every part they list (present, size, sha256 re-read, row count from the file) and data objects no
 * manifest lists.
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

/** Whether `runId` names a run of the export: the export's name and the fixed-shape time tail of a run id. */
const ownsRun = (spec: ExportConfig, runId: string): boolean =>
  markerKeys(spec.name, false).keptRunId(`${KEPT_MANIFESTS_DIR}${runId}.json`) !== undefined

/** The selected exports that own one of `runs`, each with its own runs; a run no selected export owns is refused. */
const exportsOfRuns = (
  config: RivetConfig,
  selected: ReadonlyArray<ExportConfig>,
  runs: ReadonlyArray<string>,
  narrowed: boolean
): Effect.Effect<ReadonlyArray<{ readonly spec: ExportConfig; readonly runs: ReadonlyArray<string> }>, ConfigError> => {
  const unowned = runs.find((runId) => !selected.some((spec) => ownsRun(spec, runId)))
  if (unowned !== undefined) {
    return Effect.fail(
      new ConfigError({
        path: "--run",
        message: `'${unowned}' is not a run of ${narrowed ? "the exports selected with -e" : `any export in ${config.origin}`}`,
        hint: "a run id is {export}_{YYYYMMDD}T{HHMMSS}.{mmm}: the run_id of a manifest, or a file name under _manifests/ without .json"
      })
    )
  }
  return Effect.succeed(
    selected.flatMap((spec) => {
      const own = runs.filter((runId) => ownsRun(spec, runId))
      return own.length === 0 ? [] : [{ spec, runs: own }]
    })
  )
}

/**
 * Validates the selected exports (all by default; with `runs`, the exports those runs belong to) one after another;
 * one export's error does not stop the rest.
 */
export const validateConfig = Effect.fn("Rivet.validateConfig")(function* (
  config: RivetConfig,
  options: ValidateOptions & { readonly only?: ReadonlyArray<string> | undefined } = {}
) {
  const selected = yield* selectExports(config, options.only)
  const { runs } = options
  const targets =
    runs === undefined || runs.length === 0
      ? selected.map((spec) => ({ spec, runs: undefined }))
      : yield* exportsOfRuns(config, selected, runs, (options.only ?? []).length > 0)
  return yield* Effect.forEach(targets, ({ spec, runs }) =>
    validateExport(config, spec, { ...options, runs }).pipe(
      Effect.match({
        onSuccess: (validation): ExportValidationResult => ({ _tag: "validated", validation }),
        onFailure: (error): ExportValidationResult => ({ _tag: "error", exportName: spec.name, error })
      })
    )
  )
})
