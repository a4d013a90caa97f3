import * as fs from "node:fs"
import * as path from "node:path"
import type { Manifest } from "../../src/core/manifest.js"

/** The manifest.json under a local destination directory. */
export const readManifest = (dir: string): Manifest =>
  JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Manifest

/** Every row of the NDJSON parts a manifest lists, in part order. */
export const ndjsonRows = (dir: string, manifest: Manifest = readManifest(dir)): Array<Record<string, unknown>> =>
  manifest.parts.flatMap((part) =>
    fs
      .readFileSync(path.join(dir, part.path), "utf8")
      .split("\n")
      .filter((line) => line.length > 0)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
  )

/** Counts of each value: equal multisets compare equal, so a duplicate or a missing row shows up. */
export const multiset = (values: Iterable<unknown>): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const value of values) counts.set(String(value), (counts.get(String(value)) ?? 0) + 1)
  return new Map([...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

/** Files under a directory (recursively, dot-files included), relative, sorted. */
export const filesUnder = (dir: string): Array<string> =>
  fs.existsSync(dir)
    ? fs
        .readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
        .sort()
    : []
