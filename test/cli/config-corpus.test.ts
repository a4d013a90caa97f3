import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { renderError } from "../../src/cli/render.js"
import { validateConfigFile } from "../../src/registry/load-config.js"
import { runCli, writeConfig } from "../support/cli.js"

/**
 * The malformed-config corpus (test/fixtures/bad-configs): every file holds one mistake and a header naming the
 * path its error must start with (`<file>` for errors about the whole file) and a phrase the output must contain.
 */
const CORPUS = path.resolve(import.meta.dirname, "../fixtures/bad-configs")

interface BadConfig {
  readonly name: string
  readonly file: string
  readonly path: string
  readonly phrase: string
  /** Text (a planted secret) that must never be printed. */
  readonly forbid?: string | undefined
}

const readCase = (name: string): BadConfig => {
  const file = path.join(CORPUS, name)
  // latin1: the header is ASCII, and one case is deliberately not UTF-8.
  const header = new Map(
    [...fs.readFileSync(file, "latin1").matchAll(/^# (expect-path|expect|forbid): (.*)$/gm)].map((m) => [m[1]!, m[2]!])
  )
  const expectPath = header.get("expect-path")
  const phrase = header.get("expect")
  if (expectPath === undefined || phrase === undefined) throw new Error(`${name}: header lacks expect-path or expect`)
  return { name, file, path: expectPath === "<file>" ? file : expectPath, phrase, forbid: header.get("forbid") }
}

const corpus = fs.readdirSync(CORPUS).filter((name) => name.endsWith(".yaml")).sort().map(readCase)
const byName = (prefix: string): BadConfig => corpus.find((c) => c.name.includes(prefix))!

const STACK_FRAME = /\n\s+at .+:\d+:\d+/

/** What `rivet run -c <file>` writes to stderr when the config does not load (run.ts → printErrors → renderError). */
const renderLoad = (file: string): Promise<string | undefined> =>
  Effect.runPromise(
    Effect.map(validateConfigFile(file), (result) =>
      Either.isLeft(result) ? result.left.map((error) => `${renderError(error)}\n`).join("") : undefined
    ).pipe(Effect.provide(NodeFileSystem.layer))
  )

/** One readable error: exactly one `Error:` line starting with the path, the phrase, no stack, bounded length. */
const expectOneReadableError = (stderr: string, bad: Pick<BadConfig, "path" | "phrase" | "forbid">) => {
  const errorLines = stderr.split("\n").filter((line) => line.startsWith("Error: "))
  expect(errorLines, stderr).toHaveLength(1)
  expect(errorLines[0]!.startsWith(`Error: ${bad.path}: `), errorLines[0]).toBe(true)
  expect(stderr).toContain(bad.phrase)
  expect(stderr).not.toMatch(STACK_FRAME)
  expect(stderr.length).toBeLessThan(2_500)
  if (bad.forbid !== undefined) expect(stderr).not.toContain(bad.forbid)
}

describe("malformed-config corpus", () => {
  it("has at least 55 cases, and the variables it references are unset", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(55)
    expect(Object.keys(process.env).filter((key) => key.startsWith("RIVET_H4_UNSET"))).toEqual([])
  })

  it.each(corpus.map((bad) => [bad.name, bad] as const))("%s → one readable error naming the path", async (_name, bad) => {
    const stderr = await renderLoad(bad.file)
    expect(stderr, "the config was accepted").toBeDefined()
    expectOneReadableError(stderr!, bad)
  })

  it("a 1 MB value is echoed elided, not in full", async () => {
    const file = writeConfig(
      `source: { type: postgres, url: 'postgres://postgres@127.0.0.1:1/none' }\nexports:\n  - name: orders\n    table: ${"t".repeat(1_000_000)}-x\n    destination: { type: stdout }\n`
    )
    const stderr = await renderLoad(file)
    expectOneReadableError(stderr!, { path: "exports[0].table (line 4)", phrase: "characters]…" })
    expect(stderr).toContain('invalid table name "ttt')
  })
})

// The real CLI for a sample of categories: the exit code, an empty stdout and no stack trace end to end.
const sample = [
  "yaml-duplicate-key",
  "yaml-not-utf8",
  "unknown-local-key",
  "endpoint-userinfo",
  "variable-unset-url",
  "huge-newline-key"
].map(byName)

describe("malformed configs through rivet run", () => {
  it.concurrent.each(sample.map((bad) => [bad.name, bad] as const))("%s → exit 1", async (_name, bad) => {
    const result = await runCli(["run", "-c", bad.file])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expectOneReadableError(result.stderr, bad)
  })

  it.concurrent("a missing config file is a usage error, not a crash", async () => {
    const result = await runCli(["run", "-c", "/nonexistent/rivet.yaml"])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expectOneReadableError(result.stderr, { path: "/nonexistent/rivet.yaml", phrase: "cannot read the config file" })
  })
})
