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
 * The file name of a data object: the last segment when every directory before it is a `key=value` partition
 * directory (so a partitioned export's parts are recognized by name), else the whole key.
 */
export const partFileName = (key: string): string => {
  const segments = key.split("/")
  return segments.length > 1 && segments.slice(0, -1).every((segment) => segment.includes("=")) ? segments.at(-1)! : key
}
