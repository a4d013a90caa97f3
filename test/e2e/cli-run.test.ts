import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

const source = () => `source: { type: postgres, url: "${testPgUrl()}" }`

describe("rivet run (CLI)", () => {
  it("a query failing after some batches leaves nothing under the destination and exits non-zero", async () => {
    const config = writeConfig(`${source()}
exports:
  - name: breaks
    query: select case when i > 25000 then 1 / (i - i) else i end as v from generate_series(1, 50000) as i
    batch_size: 1000
    destination: { type: local, path: out }
`)
    const result = await runCli(["run", "-c", config])
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("division by zero")
    const out = path.join(path.dirname(config), "out")
    expect(fs.existsSync(out) ? fs.readdirSync(out) : []).toEqual([])
  })

  it("streams CSV to stdout (data only) with the summary on stderr", async () => {
    const config = writeConfig(`${source()}
exports:
  - name: numbers
    query: select i as n, 'x' || i as label from generate_series(1, 3) as i
    format: csv
    destination: { type: stdout }
`)
    const result = await runCli(["run", "-c", config])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("n,label\n1,x1\n2,x2\n3,x3\n")
    expect(result.stderr).toContain("── numbers")
    expect(result.stderr).toContain("rows:")
  })

  it("runs only the exports named with --export and rejects unknown names", async () => {
    const config = writeConfig(`${source()}
exports:
  - { name: one, query: select 1 as a, format: csv, destination: { type: local, path: one } }
  - { name: two, query: select 2 as a, format: csv, destination: { type: local, path: two } }
`)
    const picked = await runCli(["run", "-c", config, "--export", "two"])
    expect(picked.code).toBe(0)
    expect(fs.existsSync(path.join(path.dirname(config), "one"))).toBe(false)
    expect(fs.readdirSync(path.join(path.dirname(config), "two"))).toContain("_SUCCESS")
    const unknown = await runCli(["run", "-c", config, "-e", "three"])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("export 'three' is not defined")
    expect(unknown.stderr).toContain("known exports: one, two")
  })

  it("a source that is down fails once with a retryable exit code and the password masked", async () => {
    const config = writeConfig(`source: { type: postgres, url: "postgres://app:s3cret-pw@127.0.0.1:1/none" }
exports:
  - { name: a, query: select 1, destination: { type: local, path: a } }
  - { name: b, query: select 1, destination: { type: local, path: b } }
`)
    const result = await runCli(["run", "-c", config])
    expect(result.code).toBe(2)
    expect(result.stderr.match(/^Error: /gm)).toHaveLength(1)
    expect(result.stderr + result.stdout).not.toContain("s3cret-pw")
  })

  it("--version and --help work", async () => {
    const version = await runCli(["--version"])
    expect(version.code).toBe(0)
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/)
    const help = await runCli(["run", "--help"])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain("--config")
  })
})
