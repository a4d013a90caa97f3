import { type MarkerKeys, partNameStart } from "../../core/naming.js"
import { type Finding, finding } from "./findings.js"
import type { History } from "./history.js"
import { partFileName } from "../../engine/partition/check.js"

/** What deciding which objects are untracked needs. */
export interface UntrackedContext {
  readonly exportName: string
  /** The format's extension: only objects with it are this export's data parts. */
  readonly extension: string
  readonly keys: MarkerKeys
  readonly strict: boolean
}

const secondOf = (iso: string | undefined): number => Math.floor(Date.parse(iso ?? "") / 1000) * 1000

/** Why an object no manifest lists is there, judged by the time in its name. */
const originOf = (history: History, keys: MarkerKeys, namedAt: number): string => {
  if (history.kept.length === 0) {
    return namedAt < secondOf(history.latest?.manifest?.started_at)
      ? `not listed in ${keys.manifest} (named before the run in the manifest started: most likely a part of an earlier run)`
      : `not listed in ${keys.manifest} (named during the run in the manifest: an extra copy left by a failed or retried write (delivery is at-least-once))`
  }
  const starts = [history.latest, ...history.kept].map((found) => secondOf(found?.manifest?.started_at)).filter(Number.isFinite)
  const oldest = Math.min(...starts)
  const where = `not listed in ${keys.manifest} or any kept manifest`
  return namedAt < oldest
    ? `${where} (named before the oldest kept run started: most likely a part of a run from before manifests were kept, or of a run whose kept manifest was deleted)`
    : `${where} (named since the oldest kept run started: an extra copy left by a failed or interrupted run — delivery is at-least-once — or a part of a run whose kept manifest was deleted)`
}

/**
 * Data objects of this export (named `{export}_{YYYYMMDD}_…` or `{export}_{YYYYMMDD}T…` with the format's
 * extension) that neither the latest manifest nor any kept manifest lists. Temp files start with a dot and markers
 * have other names, so neither can match.
 */
export const untrackedObjects = (
  context: UntrackedContext,
  history: History,
  keys: ReadonlyArray<string>
): ReadonlyArray<Finding> => {
  const named = partNameStart(context.exportName)
  const listed = new Set(
    [history.latest, ...history.kept].flatMap((found) => found?.manifest?.parts.map((part) => part.path) ?? [])
  )
  return keys.flatMap((key) => {
    const match = named.exec(partFileName(key))
    if (match === null || !key.endsWith(`.${context.extension}`) || listed.has(key)) return []
    const [, year, month, day, hour, minute, second] = match.map(Number)
    const namedAt = Date.UTC(year!, month! - 1, day!, hour!, minute!, second!)
    return [finding("UNTRACKED_OBJECT", key, originOf(history, context.keys, namedAt), context.strict)]
  })
}
