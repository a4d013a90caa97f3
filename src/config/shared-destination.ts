import * as path from "node:path"
import { ConfigError } from "../core/errors.js"
import { chunkPartName, pagePartName, partNameStart, singleRunnerPartName } from "../core/naming.js"
import type { AnySinkPlugin } from "../core/plugin.js"
import type { Configured } from "./model.js"

/** Keys that say where a destination writes; other keys (credentials, tuning) do not change the place. */
const LOCATION_KEYS = ["path", "bucket", "container", "prefix", "endpoint", "account_url", "account_name"]

/**
 * Where a destination writes, comparable across exports: its type and location keys (relative paths resolved
 * against the config's directory); a destination without such keys compares by its whole decoded config.
 */
export const destinationPlace = (destination: Configured<AnySinkPlugin>, configDir: string): string => {
  const config =
    typeof destination.config === "object" && destination.config !== null
      ? (destination.config as Record<string, unknown>)
      : {}
  const located = LOCATION_KEYS.filter((key) => config[key] !== undefined && config[key] !== "")
  const place = located.length > 0 ? Object.fromEntries(located.map((key) => [key, config[key]])) : config
  if (typeof place["path"] === "string") place["path"] = path.resolve(configDir, place["path"])
  return JSON.stringify([destination.plugin.type, Object.entries(place).sort(([a], [b]) => a.localeCompare(b))])
}

/** An export whose name and destination decoded (the rest of it may not have): enough to compare places. */
export interface PlacedExport {
  readonly index: number
  readonly name: string
  readonly destination: Configured<AnySinkPlugin>
}

/** Stdout exports share no files (a lint warns that their bytes are concatenated). */
const writesFiles = (placed: PlacedExport) => placed.destination.plugin.type !== "stdout"

/** The exports of each place that more than one export writes files to, in config order. */
const sharedPlaces = (placed: ReadonlyArray<PlacedExport>, configDir: string): ReadonlyArray<ReadonlyArray<PlacedExport>> => {
  const byPlace = new Map<string, Array<PlacedExport>>()
  const seen = new Set<string>()
  for (const entry of placed) {
    // A repeated name is reported as a duplicate export; it places nothing.
    if (!writesFiles(entry) || seen.has(entry.name)) continue
    seen.add(entry.name)
    const place = destinationPlace(entry.destination, configDir)
    byPlace.set(place, [...(byPlace.get(place) ?? []), entry])
  }
  return [...byPlace.values()].filter((group) => group.length > 1)
}

/** Names of exports that share their destination with another export: their markers are named per export. */
export const sharedDestinationExports = (placed: ReadonlyArray<PlacedExport>, configDir: string): ReadonlySet<string> =>
  new Set(sharedPlaces(placed, configDir).flatMap((group) => group.map((entry) => entry.name)))

/** One name of each kind of data part an export writes (single, chunked, keyset runner, split by size). */
const sampleParts = (exportName: string): ReadonlyArray<string> => {
  const at = new Date(Date.UTC(2025, 0, 1, 2, 0, 0, 123))
  return [
    singleRunnerPartName(exportName, at, "parquet", 0, true),
    chunkPartName(exportName, at, 0, "0123456789abcdef", "parquet", 0, true),
    pagePartName(exportName, at, 0, "parquet", 0, true)
  ]
}

/**
 * Whether the parts of `imitator` can be taken for parts of `owner`, compared without letter case (a
 * case-insensitive file system, or a bucket synced to one, would merge them).
 */
const partsLookLike = (imitator: string, owner: string): boolean => {
  const start = new RegExp(partNameStart(owner).source, "i")
  return sampleParts(imitator).some((name) => start.test(name))
}

const at = (entry: PlacedExport) => `exports[${entry.index}].name`

const HINT_OWN_DESTINATION = "or give each export its own destination (e.g. a path or prefix named after the export)"

/** Why two exports in one place could overwrite or be mistaken for each other's files, or undefined. */
const collision = (earlier: PlacedExport, later: PlacedExport): ConfigError | undefined => {
  const both = `exports '${earlier.name}' (${at(earlier)}) and '${later.name}' (${at(later)}) write to the same destination`
  if (earlier.name.toLowerCase() === later.name.toLowerCase()) {
    return new ConfigError({
      path: at(later),
      message: `${both} and their names differ only in letter case: on a case-insensitive file system (macOS, Windows) their manifests, markers and parts would overwrite each other`,
      hint: `rename one of them, ${HINT_OWN_DESTINATION}`
    })
  }
  const [imitator, owner] = partsLookLike(later.name, earlier.name)
    ? [later, earlier]
    : partsLookLike(earlier.name, later.name)
      ? [earlier, later]
      : []
  if (imitator === undefined || owner === undefined) return undefined
  return new ConfigError({
    path: at(later),
    message: `${both}, and the part names of '${imitator.name}' begin like those of '${owner.name}' (${owner.name}_{YYYYMMDD}_{HHMMSS}…): validation, resume and upload clean-up could not tell the two exports' files apart`,
    hint: `rename '${imitator.name}' so that what follows '${owner.name}_' does not begin with a date and time (e.g. ${owner.name}_archive), ${HINT_OWN_DESTINATION}`
  })
}

/**
 * Exports may share a destination: each then has its own manifest and marker names, and every part name starts
 * with the export's name. Refused are only the pairs whose files could still collide — names that differ only in
 * case, or a name that continues another with a date, so its parts look like the other's. One error per export,
 * naming the first export it collides with.
 */
export const sharedDestinationProblems = (
  placed: ReadonlyArray<PlacedExport>,
  configDir: string
): ReadonlyArray<ConfigError> =>
  sharedPlaces(placed, configDir).flatMap((group) =>
    group.flatMap((later, position) => {
      for (const earlier of group.slice(0, position)) {
        const problem = collision(earlier, later)
        if (problem !== undefined) return [problem]
      }
      return []
    })
  )
