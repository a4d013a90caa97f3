import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { SinkError } from "../../core/errors.js"
import type { MarkerKeys } from "../../core/naming.js"
import { type Finding, finding } from "./findings.js"
import { checkManifest, type StoredManifest } from "./manifest-check.js"

/** One manifest at the destination: the latest (`manifest.json`) or a kept copy (`_manifests/{run_id}.json`). */
export interface FoundManifest {
  readonly key: string
  readonly bytes: Uint8Array
  /** Absent when it does not decode (a MANIFEST_INVALID finding says why) or is too large to be Rivet's. */
  readonly manifest?: StoredManifest | undefined
}

/** The latest manifest (absent when there is none) and every kept one of the export, oldest run first. */
export interface History {
  readonly latest?: FoundManifest | undefined
  readonly kept: ReadonlyArray<FoundManifest & { readonly runId: string }>
  readonly findings: ReadonlyArray<Finding>
}

/** What reading the manifests needs. */
export interface HistoryContext {
  readonly exportName: string
  readonly keys: MarkerKeys
  /** Sizes of the objects listed at the destination, by key. */
  readonly listing: ReadonlyMap<string, number>
  readonly read: (key: string) => Stream.Stream<Uint8Array, SinkError>
  readonly retried: <A>(effect: Effect.Effect<A, SinkError>) => Effect.Effect<A, SinkError>
  readonly strict: boolean
}

/** Larger manifests are not Rivet's; they are reported without being read into memory. */
export const MAX_MANIFEST_BYTES = 64 * 1024 * 1024
/** Kept manifests read at once: each is one small GET. */
const READ_CONCURRENCY = 4

export const readAll = (read: (key: string) => Stream.Stream<Uint8Array, SinkError>, key: string) =>
  Stream.runCollect(read(key)).pipe(Effect.map((chunks) => new Uint8Array(Buffer.concat([...chunks]))))

const readManifest = (context: HistoryContext, key: string, size: number) =>
  Effect.gen(function* () {
    if (size > MAX_MANIFEST_BYTES) {
      const message = `${size} bytes: not a manifest Rivet wrote`
      return { found: { key, bytes: new Uint8Array() }, findings: [finding("MANIFEST_INVALID", key, message, context.strict)] }
    }
    const bytes = yield* context.retried(readAll(context.read, key))
    const checked = checkManifest(bytes, key, context.exportName, context.strict)
    return { found: { key, bytes, manifest: checked.manifest }, findings: checked.findings }
  })

/** Reads the latest manifest and every kept manifest of the export, checking each on its own. */
export const readHistory = (context: HistoryContext): Effect.Effect<History, SinkError> =>
  Effect.gen(function* () {
    const { keys, listing, strict } = context
    const latestSize = listing.get(keys.manifest)
    const latest = latestSize === undefined ? undefined : yield* readManifest(context, keys.manifest, latestSize)
    const keptKeys = [...listing.keys()]
      .flatMap((key) => {
        const runId = keys.keptRunId(key)
        return runId === undefined ? [] : [{ key, runId }]
      })
      .sort((a, b) => (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0))
    const kept = yield* Effect.forEach(
      keptKeys,
      ({ key, runId }) =>
        Effect.map(readManifest(context, key, listing.get(key)!), ({ found, findings }) => {
          const named = found.manifest?.run_id
          const mislabelled =
            named !== undefined && named !== runId
              ? [finding("MANIFEST_INVALID", key, `holds run '${named}', not run '${runId}' that its name says`, strict)]
              : []
          return { found: { ...found, runId }, findings: [...findings, ...mislabelled] }
        }),
      { concurrency: READ_CONCURRENCY }
    )
    return {
      latest: latest?.found,
      kept: kept.map((entry) => entry.found),
      findings: [...(latest?.findings ?? []), ...kept.flatMap((entry) => entry.findings)]
    }
  })

const startOf = (found: FoundManifest): number => Date.parse(found.manifest?.started_at ?? "")

/**
 * How the latest manifest and the kept ones agree: the latest run's kept copy exists and is byte for byte the
 * latest manifest (both are written from the same bytes), and no kept run started after the latest one — such a
 * run wrote its kept manifest but never its latest manifest and marker. A destination written before runs kept
 * their manifests (no kept manifest at all) has nothing to compare.
 */
export const historyFindings = (history: History, keys: MarkerKeys, strict: boolean): ReadonlyArray<Finding> => {
  const { latest, kept } = history
  const runId = latest?.manifest?.run_id
  if (latest === undefined || kept.length === 0 || runId === undefined) return []
  const findings: Array<Finding> = []
  const copy = kept.find((entry) => entry.runId === runId)
  if (copy === undefined) {
    const message = `${keys.manifest} is run '${runId}', whose kept copy is missing: it was deleted, or the run was written by a Rivet that did not keep manifests`
    findings.push(finding("KEPT_MANIFEST_MISSING", keys.kept(runId), message, strict))
  } else if (Buffer.compare(copy.bytes, latest.bytes) !== 0) {
    const message = `differs from ${keys.manifest}, which is the same run: one of them was changed after the run wrote them (${keys.success} tells which one it vouches for)`
    findings.push(finding("KEPT_MANIFEST_MISMATCH", copy.key, message, strict))
  }
  const latestStart = startOf(latest)
  for (const entry of kept) {
    if (entry.runId === runId || !(startOf(entry) > latestStart)) continue
    const message =
      `run '${entry.runId}' started after the run in ${keys.manifest} but did not publish: it stopped between writing ` +
      `this kept manifest and ${keys.manifest} (a crash, or another run's manifest found there), or is publishing right now; ` +
      `its parts are complete, but no ${keys.success} vouched for them and the export's next run reads its rows again`
    findings.push(finding("RUN_NOT_PUBLISHED", entry.key, message, strict))
  }
  return findings
}

/**
 * The manifests whose parts are checked: every kept one plus the latest (the same run's parts are checked once),
 * or only the runs asked for — a kept manifest, or the latest one when it is that run and was not kept (a
 * destination written before runs kept their manifests). A run asked for that neither holds is a finding.
 */
export const selectRuns = (
  history: History,
  keys: MarkerKeys,
  runs: ReadonlyArray<string> | undefined,
  strict: boolean
): { readonly selected: ReadonlyArray<FoundManifest>; readonly findings: ReadonlyArray<Finding> } => {
  const { latest, kept } = history
  if (runs === undefined) {
    const latestKept = kept.some((entry) => Buffer.compare(entry.bytes, latest?.bytes ?? new Uint8Array()) === 0)
    return { selected: latest === undefined || latestKept ? kept : [...kept, latest], findings: [] }
  }
  const selected: Array<FoundManifest> = []
  const findings: Array<Finding> = []
  for (const runId of runs) {
    const found = kept.find((entry) => entry.runId === runId) ?? (latest?.manifest?.run_id === runId ? latest : undefined)
    if (found !== undefined) {
      selected.push(found)
      continue
    }
    const newest = kept.slice(-3).map((entry) => `'${entry.runId}'`)
    const known = newest.length === 0 ? "no run of this export is kept here" : `the newest kept runs are ${newest.join(", ")}`
    findings.push(finding("MANIFEST_MISSING", keys.kept(runId), `no manifest of run '${runId}' here: ${known}`, strict))
  }
  return { selected, findings }
}
