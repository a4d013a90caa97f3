import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

/** Misbehaving plugins end in a readable error and a non-zero exit, never a crash or a stack trace. */

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/plugins")
const fixture = (name: string) => path.join(FIXTURES, name)
const TABLE = "plugmis_items"
const dirs: Array<string> = []

beforeAll(async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id int8 PRIMARY KEY, label text NOT NULL);
    INSERT INTO ${TABLE} SELECT i, 'item number ' || i FROM generate_series(1, 2000) AS i;
  `)
  await sql.end()
})

afterAll(async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** A config in a fresh temp dir; `{dir}` in the YAML is replaced by that directory. */
const configWith = (body: (dir: string) => string) => {
  const file = writeConfig("")
  const dir = path.dirname(file)
  dirs.push(dir)
  fs.writeFileSync(file, body(dir))
  return { file, dir, out: path.join(dir, "out"), journal: path.join(dir, "journal.log") }
}

const exportTo = (destination: string, extra = "") => `
source:
  type: postgres
  url: ${testPgUrl()}
exports:
  - name: items
    table: ${TABLE}
    format: csv
${extra}    destination:
${destination}`

const journalDestination = (dir: string, extra = "") =>
  `      type: journal\n      path: ${path.join(dir, "out")}\n      journal: ${path.join(dir, "journal.log")}\n${extra}`

const expectCleanFailure = (result: { code: number | null; stderr: string }) => {
  expect(result.code).not.toBe(0)
  expect(result.stderr).toMatch(/^Error: /m)
  expect(result.stderr).not.toMatch(/^\s+at /m)
}

const journalOf = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, "utf8").trim().split("\n") : [])

describe("plugins that cannot be loaded", () => {
  it("a module without a default export", async () => {
    const { file } = configWith((dir) => `plugins: ["${fixture("no-default.mjs")}"]\n${exportTo(journalDestination(dir))}`)
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`Error: plugins[0] (line 1): plugin '${fixture("no-default.mjs")}' has no default export`)
    expect(result.stderr).toContain("Hint: the module must `export default defineSink({...})`")
    expectCleanFailure(result)
  })

  it("a plugin built for another plugin API version", async () => {
    const { file } = configWith((dir) => `plugins: ["${fixture("wrong-api-version.mjs")}"]\n${exportTo(journalDestination(dir))}`)
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("targets plugin API version 2, this Rivet supports 1")
    expect(result.stderr).toContain("Hint: upgrade Rivet to a release with plugin API version 2")
    expectCleanFailure(result)
  })

  it("a plugin written for an older plugin API (apiVersion kept by defineSink) says to upgrade the plugin", async () => {
    const { file } = configWith((dir) => `plugins: ["${fixture("old-api-version.mjs")}"]\n${exportTo(journalDestination(dir))}`)
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("targets plugin API version 0, this Rivet supports 1")
    expect(result.stderr).toContain("Hint: upgrade the plugin to a release built for plugin API version 1")
    expectCleanFailure(result)
  })

  it("a plugin value made without define* is named as such", async () => {
    const { file } = configWith((dir) => `plugins: ["${fixture("hand-made.mjs")}"]\n${exportTo(journalDestination(dir))}`)
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("has no apiVersion: it was not made with defineSource / defineFormat / defineSink")
    expectCleanFailure(result)
  })

  it("a type defined by two plugins names both", async () => {
    const { file } = configWith(
      (dir) =>
        `plugins:\n  - ${fixture("journal-sink.mjs")}\n  - ${fixture("another-journal.mjs")}\n${exportTo(journalDestination(dir))}`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(
      `Error: plugins[1] (line 3): sink type 'journal' is defined twice: by '${fixture("journal-sink.mjs")}' and by '${fixture("another-journal.mjs")}'`
    )
    expectCleanFailure(result)
  })

  it("a plugin reusing a built-in type is refused", async () => {
    const { file } = configWith((dir) => `plugins: ["${fixture("local-clash.mjs")}"]\n${exportTo(journalDestination(dir))}`)
    const result = await runCli(["run", "-c", file])
    expect(result.stderr).toContain(`sink type 'local' is defined twice: by built-in and by '${fixture("local-clash.mjs")}'`)
    expect(result.stderr).toContain("Hint: a plugin cannot replace the built-in 'local'; give it another type")
    expectCleanFailure(result)
  })

  it("a path that does not exist", async () => {
    const { file } = configWith((dir) => `plugins: ["./missing-plugin.mjs"]\n${exportTo(journalDestination(dir))}`)
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("Error: plugins[0] (line 1): cannot load plugin './missing-plugin.mjs': Cannot find module")
    expectCleanFailure(result)
  })
})

describe("a plugin's config block is checked by its own schema, like a built-in's", () => {
  it("an unknown key, with the path, line and a did-you-mean", async () => {
    const { file } = configWith(
      (dir) =>
        `plugins: ["${fixture("journal-sink.mjs")}"]\n${exportTo(journalDestination(dir, "      fail_inn: put\n"))}`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^Error: exports\[0\]\.destination\.fail_inn \(line \d+\): unknown key 'fail_inn'$/m)
    expect(result.stderr).toContain("Hint: did you mean 'fail_in'?")
    expectCleanFailure(result)
  })

  it("a missing required key and a value of the wrong type", async () => {
    const { file } = configWith(
      () =>
        `plugins: ["${fixture("journal-sink.mjs")}"]\n${exportTo("      type: journal\n      journal: j.log\n      block_size: lots\n")}`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^Error: exports\[0\]\.destination\.path( \(line \d+\))?: .*(missing|required)/m)
    expect(result.stderr).toMatch(/^Error: exports\[0\]\.destination\.block_size \(line \d+\): /m)
    expectCleanFailure(result)
  })
})

describe("plugins that throw while running", () => {
  it("a sink whose writeBlock throws: the upload is aborted, nothing is published", async () => {
    const { file, out, journal } = configWith(
      (dir) =>
        `plugins: ["${fixture("journal-sink.mjs")}"]\n${exportTo(journalDestination(dir, "      fail_in: writeBlock\n      block_size: 4096\n"))}`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("journal sink exploded in writeBlock")
    expectCleanFailure(result)
    const calls = journalOf(journal)
    const begun = calls.find((line) => line.startsWith("begin "))!.slice("begin ".length)
    expect(calls).toContain(`abort ${begun}`)
    expect(calls.filter((line) => line.startsWith("complete ") || line.startsWith("put "))).toEqual([])
    expect(fs.existsSync(out) ? fs.readdirSync(out) : []).toEqual([])
  })

  it("an async writeBlock that rejects: a PluginError naming plugin, operation and export; aborted; journaled failed; --json error event", async () => {
    const { file, out, journal } = configWith(
      (dir) =>
        `plugins: ["${fixture("journal-sink.mjs")}"]\n${exportTo(journalDestination(dir, "      reject_in: writeBlock\n      block_size: 4096\n"))}`
    )
    const result = await runCli(["run", "-c", file, "--json"])
    expect(result.code).toBe(1)
    const events = result.stderr
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { event: string; kind?: string; message?: string })
    const error = events.find((event) => event.event === "error")
    expect(error?.kind).toBe("PluginError")
    expect(error?.message).toContain(
      "the sink plugin 'journal' rejected in writeBlock (export 'items'): journal sink rejected in writeBlock"
    )
    expect(result.stderr).not.toMatch(/^\s+at /m)
    const calls = journalOf(journal)
    const begun = calls.find((line) => line.startsWith("begin "))!.slice("begin ".length)
    expect(calls).toContain(`abort ${begun}`)
    expect(fs.existsSync(out) ? fs.readdirSync(out) : []).toEqual([])
    const state = await runCli(["state", "show", "-c", file, "--json"])
    const [shown] = JSON.parse(state.stdout) as Array<{ last_run: { status: string; error: string } }>
    expect(shown?.last_run.status).toBe("failed")
    expect(shown?.last_run.error).toContain("rejected in writeBlock")
  })

  it("a sink whose put throws (small objects): no _SUCCESS", async () => {
    const { file, out, journal } = configWith(
      (dir) => `plugins: ["${fixture("journal-sink.mjs")}"]\n${exportTo(journalDestination(dir, "      fail_in: put\n"))}`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("journal sink exploded in put")
    expectCleanFailure(result)
    expect(journalOf(journal).some((line) => line.startsWith("put "))).toBe(true)
    expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(false)
  })

  it("with --verbose the error carries the details for a bug report", async () => {
    const { file } = configWith(
      (dir) => `plugins: ["${fixture("journal-sink.mjs")}"]\n${exportTo(journalDestination(dir, "      fail_in: put\n"))}`
    )
    const result = await runCli(["run", "-c", file, "--verbose"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("journal sink exploded in put")
    // Where it was thrown: the plugin's own stack frame, after the readable error and its hint.
    expect(result.stderr).toMatch(/\nDetail: Error: journal sink exploded in put\n\s+at .*journal-sink\.mjs:\d+:\d+/)
  })

  it("a format whose encoder throws: nothing lands at the destination", async () => {
    const { file, out } = configWith(
      (dir) =>
        `plugins: ["${fixture("throwing-format.mjs")}"]\n${exportTo(`      type: local\n      path: ${path.join(dir, "out")}\n`).replace("format: csv", "format: explode")}`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("boom in write")
    expectCleanFailure(result)
    const left = fs.existsSync(out) ? fs.readdirSync(out) : []
    expect(left).toEqual([])
  })
})
