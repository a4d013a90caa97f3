import type { PartRecord } from "../../core/manifest.js"
import { parsePartitionPath } from "./escape.js"

const show = (entries: ReadonlyArray<readonly [string, string | null]>) =>
  entries.map(([key, value]) => `${key}=${value === null ? "NULL" : JSON.stringify(value)}`).join(", ")

/** Why a part's recorded partition values disagree with the `key=value/` directories of its path, or undefined. */
export const partitionMismatch = (part: PartRecord): string | undefined => {
  let found: ReadonlyArray<readonly [string, string | null]>
  try {
    found = parsePartitionPath(part.path)
  } catch {
    return `lists ${part.path}, whose partition directories are not validly %-escaped (tampered manifest)`
  }
  if (part.partition === undefined) return undefined
  const recorded = Object.entries(part.partition)
  // Empty strings are written to the default partition, like NULL.
  const same =
    found.length === recorded.length &&
    found.every(([key, value], i) => key === recorded[i]![0] && value === (recorded[i]![1] === "" ? null : recorded[i]![1]))
  return same ? undefined : `lists ${part.path} with partition values ${show(recorded)}, but its directories say ${show(found)}`
}

/**
 * A part as the manifest lists it: with its partition values. Parts of an earlier attempt come back from the state
 * store, which keeps only the path; its `key=value/` directories hold the same values exactly (NULL and "" both
 * being the default partition, recorded as null).
 */
export const withPartitionValues = (part: PartRecord): PartRecord =>
  part.partition !== undefined ? part : { ...part, partition: Object.fromEntries(parsePartitionPath(part.path)) }

/**
 * The file name of a data object: the last segment when every directory before it is a `key=value` partition
 * directory (so a partitioned export's parts are recognized by name), else the whole key.
 */
export const partFileName = (key: string): string => {
  const segments = key.split("/")
  return segments.length > 1 && segments.slice(0, -1).every((segment) => segment.includes("=")) ? segments.at(-1)! : key
}
