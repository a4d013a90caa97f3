import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { renderFindings } from "../../src/cli/commands/check.js"
import { renderError } from "../../src/cli/render.js"
import { checkConfigFile } from "../../src/registry/check-config.js"
import { runCli } from "../support/cli.js"

/**
 * Configs written the way the Rust rivet's are (its keys, its spellings), each with the outcome of `rivet check`
 * pinned in its header: `# outcome: accepted | refused`, then `# | ` and every line check prints on stderr (errors
 * with their hints, warnings, notes), in order. A change of any message shows here as a diff.
 */
const CORPUS = path.resolve(import.meta.dirname, "../fixtures/rust-configs")

/** The variables the configs name: set (as a deployed job has them), except the one a case leaves unset on purpose. */
const ENV = {
  PG_URL: "postgres://rivet@db.internal:5432/shop",
  MONGO_URL: "mongodb://db.internal/shop",
  MYSQL_URL: "mysql://db.internal/shop",
  MYSQL_PASSWORD: "not-a-secret",
  SLACK_HOOK: "https://hooks.slack.example/services/T0/B0/x"
}

interface Case {
  readonly name: string
  readonly file: string
  readonly text: string
  readonly outcome: "accepted" | "refused"
  readonly lines: ReadonlyArray<string>
}

const readCase = (name: string): Case => {
  const file = path.join(CORPUS, name)
  const text = fs.readFileSync(file, "utf8")
  const outcome = /^# outcome: (accepted|refused)$/m.exec(text)?.[1]
  if (outcome !== "accepted" && outcome !== "refused") throw new Error(`${name}: no '# outcome:' line`)
  const lines = [...text.matchAll(/^# \| (.*)$/gm)].map((match) => match[1]!)
  return { name, file, text, outcome, lines }
}

const corpus = fs.readdirSync(CORPUS).filter((name) => name.endsWith(".yaml")).sort().map(readCase)

/** What `rivet check` prints on stderr for a file (printErrors, then renderFindings), as lines. */
const checkOutput = async (file: string) => {
  const report = await Effect.runPromise(Effect.provide(checkConfigFile(file, { env: ENV }), NodeFileSystem.layer))
  const text = report.errors.map((error) => `${renderError(error)}\n`).join("") + renderFindings([...report.warnings, ...report.notes])
  return { report, lines: text.split("\n").filter((line) => line !== "") }
}

describe("configs of the Rust rivet through rivet check", () => {
  it("has at least 30 cases, covering every key a migration meets", () => {
    expect(corpus.length).toBeGreaterThanOrEqual(30)
    const keys = [
      "wave", "parallel_safe", "source_group", "reconcile_required", "target", "load", "tables", "query_file",
      "credentials_file", "cdc", "mongo", "meta_columns", "cursor_fallback_column", "incremental_cursor_mode",
      "chunk_max_attempts", "url_env"
    ]
    for (const key of keys) {
      expect(corpus.some((c) => new RegExp(`^\\s*(- )?${key}:|[{,] ${key}:|type: ${key}\\b`, "m").test(c.text)), key).toBe(true)
    }
    expect(corpus.filter((c) => c.outcome === "accepted").length).toBeGreaterThanOrEqual(10)
  })

  it.each(corpus.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const { report, lines } = await checkOutput(c.file)
    expect(report.errors.length === 0 ? "accepted" : "refused").toBe(c.outcome)
    expect(lines).toEqual(c.lines)
  })
})

describe("rivet check on a Rust config (the CLI)", () => {
  it("accepts the scheduling keys: exit 0, the OK line counts the notes, each note names its path", async () => {
    const file = path.join(CORPUS, "02-wave-parallel-safe.yaml")
    const result = await runCli(["check", "-c", file], { env: ENV })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout).toBe(`OK: ${file}: 1 export(s) valid, 2 notes\n`)
    expect(result.stderr.split("\n").filter((line) => line.startsWith("Note: "))).toEqual(readCase("02-wave-parallel-safe.yaml").lines)
  })

  it("an unset url_env fails check (exit 1); --allow-missing-env makes it a warning (exit 0)", async () => {
    const file = path.join(CORPUS, "37-url-env-unset.yaml")
    const refused = await runCli(["check", "-c", file], { env: ENV })
    expect(refused.code).toBe(1)
    expect(refused.stderr.split("\n").filter((line) => line !== "")).toEqual(readCase("37-url-env-unset.yaml").lines)
    const linted = await runCli(["check", "-c", file, "--allow-missing-env"], { env: ENV })
    expect(linted.code, linted.stderr).toBe(0)
    expect(linted.stderr).toMatch(/^Warning: source\.url_env \(line \d+\): names the environment variable RUST_CFG_UNSET_DATABASE_URL, which is not set/m)
    expect(linted.stdout).toBe(`OK: ${file}: 1 export(s) valid, 1 warning\n`)
    // -p sets the variable for the one command, as it does for ${VAR}.
    const given = await runCli(["check", "-c", file, "-p", "RUST_CFG_UNSET_DATABASE_URL=postgres://x@h/db"], { env: ENV })
    expect(given.code, given.stderr).toBe(0)
  })
})
