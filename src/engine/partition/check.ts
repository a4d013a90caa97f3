import type { PartRecord } from "../../core/manifest.js"
import { parsePartitionPath, partitionSegments } from "./escape.js"
import { BOUNDED_MARKER, nameMismatch } from "./naming.js"

const show = (entries: ReadonlyArray<readonly [string, string | null]>) =>
  entries.map(([key, value]) => `${key}=${value === null ? "NULL" : JSON.stringify(value)}`).join(", ")

/** Why a part's recorded partition values disagree with the `key=value/` directories of its path, or undefined. */
export const partitionMismatch = (part: PartRecord): string | undefined => {
  if (part.partition === undefined) {
    try {
      parsePartitionPath(part.path)
      return undefined
    } catch {
      return `lists ${part.path}, whose partition directories are not validly %-escaped (tampered manifest)`
    }
  }
  const found = partitionSegments(part.path)
  // Empty strings are written to the default partition, like NULL.
  const recorded = Object.entries(part.partition).map(([key, value]) => [key, value === "" ? null : value] as const)
  const shown = () => `lists ${part.path} with partition values ${show(recorded)}`
  if (found.length !== recorded.length || found.some(([key], i) => key !== recorded[i]![0]))
    return `${shown()}, but its directories are ${found.map(([key]) => key).join(", ") || "none"}`
  for (const [i, [key, name]] of found.entries()) {
    let why: string | undefined
    try {
      why = nameMismatch(name, recorded[i]![1])
    } catch {
      return `lists ${part.path}, whose partition directories are not validly %-escaped (tampered manifest)`
    }
    if (why !== undefined) return `${shown()}, but its directory ${key}=${name} ${why}`
  }
  return undefined
}

/**
 * A part as the manifest lists it: with its partition values. Parts of an earlier attempt come back from the state
 * store, which keeps their values since schema version 4; a part recorded before has only its path, whose
 * `key=value/` directories hold the same values (NULL and "" both being the default partition, recorded as null)
 * — such a part never has a bounded name (`%7E` and a hash), which earlier versions did not write.
 */
export const withPartitionValues = (part: PartRecord): PartRecord =>
  part.partition !== undefined || partitionSegments(part.path).some(([, name]) => name.includes(BOUNDED_MARKER))
    ? part
    : { ...part, partition: Object.fromEntries(parsePartitionPath(part.path)) }

/**
 * The file name of a data object: the last segment when every directory before it is a `key=value` partition
 * directory (so a partitioned export's parts are recognized by name), else the whole key.
 */
export const partFileName = (key: string): string => {
  const segments = key.split("/")
  return segments.length > 1 && segments.slice(0, -1).every((segment) => segment.includes("=")) ? segments.at(-1)! : key
}
