import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { runExportsEffect } from "../../../../src/api.js"
import type { ExportRun } from "../../../../src/engine/run.js"
import { testMysqlUrl } from "../../../support/mysql.js"
import { untyped } from "../../../support/config.js"

const tempDirs: Array<string> = []

/** A fresh temp directory, removed by `removeTempDirs`. */
export const tempDir = (prefix = "rivet-mysql-"): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  tempDirs.push(dir)
  return dir
}

export const removeTempDirs = (): void => {
  for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
}

/** Runs the given exports against the test MySQL (source options merged in), each to `out/<name>` under `configDir`. */
export const runMysql = (
  configDir: string,
  exports: ReadonlyArray<Record<string, unknown>>,
  options: { readonly source?: Record<string, unknown>; readonly resume?: boolean } = {}
): Promise<ReadonlyArray<ExportRun>> =>
  Effect.runPromise(
    runExportsEffect(
      untyped({
        source: { type: "mysql", url: testMysqlUrl(), ...options.source },
        exports: exports.map((spec) => ({
          format: "ndjson",
          destination: { type: "local", path: `out/${String(spec["name"])}` },
          ...spec
        }))
      }),
      { configDir, ...(options.resume ? { resume: true } : {}) }
    )
  )

export const succeeded = (outcome: ExportRun | undefined) => {
  if (outcome === undefined) throw new Error("no export ran")
  if (outcome._tag === "failure") throw new Error(`export failed: ${JSON.stringify(outcome.error)}`)
  return outcome.result
}

export const failed = (outcome: ExportRun | undefined) => {
  if (outcome === undefined) throw new Error("no export ran")
  if (outcome._tag === "success") throw new Error("export succeeded but should have failed")
  return outcome.error
}

/** The text of every part of a local export, in manifest order. */
export const partsText = (dir: string): string => {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as { parts: Array<{ path: string }> }
  return manifest.parts.map((part) => fs.readFileSync(path.join(dir, part.path), "utf8")).join("")
}
