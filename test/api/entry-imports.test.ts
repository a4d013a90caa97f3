import { spawnSync } from "node:child_process"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.resolve(import.meta.dirname, "../..")

/** Resolve hooks (in node's loader thread) that append every resolved module URL to the file given as data. */
const HOOKS = `
import { appendFileSync } from "node:fs"
let log
export const initialize = (data) => { log = data.log }
export const resolve = async (specifier, context, next) => {
  const result = await next(specifier, context)
  appendFileSync(log, result.url + "\\n")
  return result
}`

/**
 * Imports `specifier` from the repository root in a fresh node process (after `npm run build`) and returns every
 * module URL that loaded, through a resolve hook: ESM packages such as the AWS SDK never show in `require.cache`.
 */
const modulesLoadedBy = (specifier: string): ReadonlyArray<string> => {
  const log = path.join(ROOT, "node_modules", ".cache", `rivet-imports-${process.pid}-${Math.random().toString(36).slice(2)}.log`)
  const script = `
    import { mkdirSync, readFileSync, rmSync } from "node:fs"
    import { dirname } from "node:path"
    import { register } from "node:module"
    mkdirSync(dirname(${JSON.stringify(log)}), { recursive: true })
    register("data:text/javascript,${encodeURIComponent(HOOKS)}", { data: { log: ${JSON.stringify(log)} } })
    await import(${JSON.stringify(specifier)})
    process.stdout.write(readFileSync(${JSON.stringify(log)}, "utf8"))
    rmSync(${JSON.stringify(log)}, { force: true })`
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8" })
  expect(result.stderr).toBe("")
  expect(result.status).toBe(0)
  return result.stdout.split("\n").filter(Boolean)
}

const awsModules = (urls: ReadonlyArray<string>) => urls.filter((url) => url.includes("/@aws-sdk/") || url.includes("/@smithy/"))

describe("package entry points (dist, after npm run build)", () => {
  // rivet-export/testing is left out: it imports vitest, which only loads inside a vitest run.
  it.each([
    ["rivet-export", "/dist/index.js"],
    ["rivet-export/plugin", "/dist/plugin.js"]
  ])("importing %s never loads the AWS SDK", (specifier, entry) => {
    const urls = modulesLoadedBy(specifier)
    expect(urls.some((url) => url.endsWith(entry))).toBe(true)
    expect(awsModules(urls)).toEqual([])
  })

  it("the check sees the AWS SDK when something does load it (the S3 sink)", () => {
    expect(awsModules(modulesLoadedBy(path.join(ROOT, "dist/plugins/sinks/s3/index.js"))).length).toBeGreaterThan(0)
  })

  it("rivet-export/plugin loads the contract only: no runtime pipeline, no built-in plugin, no database driver", () => {
    const urls = modulesLoadedBy("rivet-export/plugin")
    expect(urls.filter((url) => /\/dist\/(runtime\/(pipeline|run)|sinks|formats|sources|registry)\b/.test(url))).toEqual([])
    expect(urls.filter((url) => url.includes("/node_modules/postgres/"))).toEqual([])
  })
})
