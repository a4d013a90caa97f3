import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

/** A config whose query, batch size and destination directory all come from variables. */
const templated = (mode = "") =>
  writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: params
    query: select i as id from generate_series(1, \${LAST_ID}) as i
    format: csv
    batch_size: \${BATCH}
    ${mode}
    destination: { type: local, path: "out/\${RUN_DATE}" }
`)

const csvIds = (dir: string): Array<number> =>
  fs
    .readdirSync(dir)
    .filter((name) => name.endsWith(".csv"))
    .flatMap((name) => fs.readFileSync(path.join(dir, name), "utf8").trim().split("\n").slice(1))
    .map(Number)
    .sort((a, b) => a - b)

describe("--param NAME=value", () => {
  it("fills ${NAME} in the config (numbers typed where a number is wanted) and wins over the environment", async () => {
    const config = templated()
    const result = await runCli(["run", "-c", config, "-p", "LAST_ID=7", "--param", "BATCH=3", "-p", "RUN_DATE=2026-12-01"], {
      env: { LAST_ID: "1000" }
    })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).not.toContain("warning")
    expect(csvIds(path.join(path.dirname(config), "out", "2026-12-01"))).toEqual([1, 2, 3, 4, 5, 6, 7])
  })

  it("reaches the worker threads of a parallel chunked export", async () => {
    const config = templated("mode: chunked\n    chunk_column: id\n    chunk_size: 250\n    parallel: 2")
    const result = await runCli(["run", "-c", config, "-p", "LAST_ID=1000", "-p", "BATCH=100", "-p", "RUN_DATE=d"], {
      env: { RIVET_LANES: "1" }
    })
    expect(result.code, result.stderr).toBe(0)
    expect(csvIds(path.join(path.dirname(config), "out", "d"))).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1))
  })

  it("every command that reads the config takes it; without it the unset variable is the error", async () => {
    const config = templated()
    const params = ["-p", "LAST_ID=2", "-p", "BATCH=1", "-p", "RUN_DATE=x"]
    expect((await runCli(["check", "-c", config, ...params])).code).toBe(0)
    const unset = await runCli(["check", "-c", config])
    expect(unset.code).toBe(1)
    expect(unset.stderr).toContain("environment variable 'LAST_ID' is not set")
    expect(unset.stderr).toContain("--param LAST_ID=")
    expect((await runCli(["plan", "-c", config, ...params])).code).toBe(0)
    expect((await runCli(["doctor", "-c", config, ...params])).code).toBe(0)
    expect((await runCli(["run", "-c", config, ...params])).code).toBe(0)
    expect((await runCli(["validate", "-c", config, ...params])).code).toBe(0)
    const state = await runCli(["state", "show", "-c", config, ...params])
    expect(state.code, state.stderr).toBe(0)
    expect(state.stdout).toContain("success")
  })

  it("a name the config never uses is a warning (a JSON event with --json)", async () => {
    const config = templated()
    const params = ["-p", "LAST_ID=1", "-p", "BATCH=1", "-p", "RUN_DATE=x", "-p", "RUN_DAET=y"]
    const plain = await runCli(["run", "-c", config, ...params])
    expect(plain.code).toBe(0)
    expect(plain.stderr).toContain("rivet: warning: --param 'RUN_DAET' is not referenced in")
    const json = await runCli(["run", "-c", config, "--json", ...params])
    const warning = json.stderr
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { event: string; message?: string })
      .find((event) => event.event === "warning")
    expect(warning?.message).toContain("--param 'RUN_DAET'")
  })

  it("a malformed one is one error naming --param, without echoing the value, and nothing runs", async () => {
    const config = templated()
    for (const bad of ["LAST_ID", "1X=s3cret-value", "-X=s3cret-value"]) {
      const result = await runCli(["run", "-c", config, "--param", bad])
      expect(result.code, bad).toBe(1)
      expect(result.stderr.split("\n").filter((line) => line.startsWith("Error: --param: "))).toHaveLength(1)
      expect(result.stderr).not.toContain("s3cret-value")
      expect(fs.existsSync(path.join(path.dirname(config), "out"))).toBe(false)
    }
  })
})
