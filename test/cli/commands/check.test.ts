import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../../support/cli.js"

// Port 1 never answers: `rivet check` must not try.
const source = "source: { type: postgres, url: 'postgres://postgres@127.0.0.1:1/none' }"

const written: Array<string> = []
const config = (yaml: string) => {
  const file = writeConfig(yaml)
  written.push(path.dirname(file))
  return file
}
afterAll(() => {
  for (const dir of written) fs.rmSync(dir, { recursive: true, force: true })
})

const check = (file: string) => runCli(["check", "-c", file])

const linesStarting = (text: string, prefix: string) => text.split("\n").filter((line) => line.startsWith(prefix))

/** A config no lint has anything to say about. */
const clean = `${source}
exports:
  - name: orders
    table: orders
    max_file_size: 256MiB
    destination: { type: local, path: out/orders }
  - name: events
    table: events
    mode: chunked
    parallel: 4
    chunk_checkpoint: true
    format: csv
    compression: gzip
    destination: { type: s3, bucket: lake, region: us-east-1, prefix: raw/events }
`

describe("rivet check", () => {
  it("accepts a clean config without connecting or writing anything: one OK line on stdout, nothing on stderr", async () => {
    const file = config(clean)
    const result = await check(file)
    expect(result.stderr).toBe("")
    expect(result.stdout).toBe(`OK: ${file}: 2 export(s) valid\n`)
    expect(result.code).toBe(0)
    expect(fs.readdirSync(path.dirname(file))).toEqual(["rivet.yaml"]) // no state file, no output directory
  })

  it("reports every error of a config in one pass, each with its path and line, and exits 1", async () => {
    const file = config(`${source}
exports:
  - name: orders
    table: orders
    batch_size: many
    destination: { type: local, path: out, pth: x }
  - name: events
    table: events
    format: csv
    compression: zstd
    destination: { type: lokal, path: out2 }
`)
    const result = await check(file)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(linesStarting(result.stderr, "Error: ")).toEqual([
      'Error: exports[0].batch_size (line 5): expected number, actual "many"',
      "Error: exports[0].destination.pth (line 6): unknown key 'pth'",
      'Error: exports[1].compression (line 10): CSV output supports compression none or gzip, not "zstd"',
      "Error: exports[1].destination.type (line 11): unknown destination type 'lokal'"
    ])
    expect(linesStarting(result.stderr, "Hint: ")).toEqual(["Hint: did you mean 'path'?", "Hint: did you mean 'local'?"])
  })

  it("accepts exports sharing one directory or prefix when their file names cannot collide", async () => {
    const file = config(`${source}
exports:
  - { name: orders, table: orders, max_file_size: 1GiB, destination: { type: local, path: out } }
  - { name: orders_archive, table: orders, max_file_size: 1GiB, destination: { type: local, path: ./out/ } }
  - { name: orders_2024, table: orders, max_file_size: 1GiB, destination: { type: local, path: out } }
  - { name: a, query: select 1, destination: { type: s3, bucket: lake, region: us-east-1, prefix: raw } }
  - { name: b, query: select 1, destination: { type: s3, bucket: lake, region: us-east-1, prefix: raw/ } }
`)
    const result = await check(file)
    expect(result.stderr).toBe("")
    expect(result.stdout).toBe(`OK: ${file}: 5 export(s) valid\n`)
    expect(result.code).toBe(0)
  })

  it("refuses exports in one place whose files could collide, in the same pass as every other error, naming both", async () => {
    const file = config(`${source}
exports:
  - name: orders
    table: orders
    batch_size: -1
    destination: { type: local, path: out }
  - name: orders_20250101
    table: orders
    destination: { type: local, path: ./out/ }
  - name: Orders
    table: orders
    destination: { type: local, path: out }
  - name: customers
    table: customers
    mode: chunky
    destination: { type: local, path: out }
`)
    const result = await check(file)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(linesStarting(result.stderr, "Error: ")).toEqual([
      "Error: exports[0].batch_size (line 5): must be a whole number from 1 to 1000000",
      'Error: exports[3].mode (line 15): expected "full" or "incremental" or "chunked" or "keyset" or "time_window" or "cdc", actual "chunky"',
      "Error: exports[1].name (line 7): exports 'orders' (exports[0].name) and 'orders_20250101' (exports[1].name) write to the same destination, and the part names of 'orders_20250101' begin like those of 'orders' (orders_{YYYYMMDD}_{HHMMSS}…): validation, resume and upload clean-up could not tell the two exports' files apart",
      "Error: exports[2].name (line 10): exports 'orders' (exports[0].name) and 'Orders' (exports[2].name) write to the same destination and their names differ only in letter case: on a case-insensitive file system (macOS, Windows) their manifests, markers and parts would overwrite each other"
    ])
    expect(result.stderr).toContain("Hint: rename 'orders_20250101' so that what follows 'orders_' does not begin with a date and time (e.g. orders_archive), or give each export its own destination")
  })

  /** [lint, export lines, severity label, path the finding names, a phrase of its message] */
  const lints: ReadonlyArray<readonly [string, string, "Warning" | "Note", string, string]> = [
    ["gzip NDJSON in one file", "    query: select 1\n    format: ndjson\n    compression: gzip", "Warning", "exports[0].compression (line 6)", "cannot be split"],
    ["gzip CSV, incremental", "    table: t\n    mode: incremental\n    cursor_column: id\n    format: csv\n    compression: gzip", "Warning", "exports[0].compression (line 8)", "read each .csv.gz with one worker"],
    ["a whole table in one file", "    table: app.orders", "Note", "exports[0].table (line 4)", "mode: full writes all of 'app.orders' into one file"],
    ["chunked without checkpoint", "    table: t\n    mode: chunked", "Note", "exports[0].mode (line 5)", "starts over from the first chunk"],
    ["keyset without checkpoint", "    table: t\n    mode: keyset", "Note", "exports[0].mode (line 5)", "starts over from the first page"],
    ["a large batch", "    query: select 1\n    batch_size: 200000", "Warning", "exports[0].batch_size (line 5)", "batch_size 200000 holds 200000 rows in memory"],
    ["a large batch in parallel", "    table: t\n    mode: chunked\n    chunk_checkpoint: true\n    parallel: 4\n    batch_size: 150000", "Warning", "exports[0].batch_size (line 8)", "150000 rows × parallel 4"],
    ["many connections", "    table: t\n    mode: chunked\n    chunk_checkpoint: true\n    parallel: 32", "Warning", "exports[0].parallel (line 7)", "opens 32 source connections"],
    // Below 64 KiB a cap is refused (an error, not a lint); between that and 1 MiB it draws this warning.
    ["a size without a unit", "    table: t\n    max_file_size: 500000", "Warning", "exports[0].max_file_size (line 5)", "max_file_size is 488.3 KiB"]
  ]

  it.concurrent.each(lints)("%s → one finding naming its path, exit 0", async (_lint, lines, label, at, phrase) => {
    const file = config(`${source}\nexports:\n  - name: e\n${lines}\n    destination: { type: local, path: out }\n`)
    const result = await check(file)
    expect(result.code).toBe(0)
    const findings = [...linesStarting(result.stderr, "Warning: "), ...linesStarting(result.stderr, "Note: ")]
    expect(findings).toHaveLength(1)
    expect(findings[0]).toMatch(new RegExp(`^${label}: `))
    expect(findings[0]).toContain(`${at}: `)
    expect(findings[0]).toContain(phrase)
    expect(linesStarting(result.stderr, "Hint: ")).toHaveLength(1)
    const counted = label === "Warning" ? "1 warning" : "1 note"
    expect(result.stdout).toBe(`OK: ${file}: 1 export(s) valid, ${counted}\n`)
  })

  it("warns about two exports on stdout (their bytes would be concatenated) without failing", async () => {
    const file = config(`${source}
exports:
  - { name: a, query: select 1, destination: { type: stdout } }
  - { name: b, query: select 2, destination: { type: stdout } }
`)
    const result = await check(file)
    expect(result.code).toBe(0)
    expect(linesStarting(result.stderr, "Warning: ")).toEqual([
      "Warning: exports[1].destination (line 4): exports 'a' (exports[0]) and 'b' both write to stdout: run together, their bytes are concatenated into one stream"
    ])
  })

  it("prints the same hint once for several exports", async () => {
    const file = config(`${source}
exports:
  - { name: a, table: a, destination: { type: local, path: out/a } }
  - { name: b, table: b, destination: { type: local, path: out/b } }
`)
    const result = await check(file)
    expect(result.code).toBe(0)
    expect(linesStarting(result.stderr, "Note: ")).toHaveLength(2)
    expect(linesStarting(result.stderr, "Hint: ")).toHaveLength(1)
    expect(result.stdout).toBe(`OK: ${file}: 2 export(s) valid, 2 notes\n`)
  })

  it("an unset or empty variable named by any *_env key is an error naming path and variable; --allow-missing-env warns", async () => {
    const file = config(`source: { type: postgres, url_env: CHECK_ENV_URL }
exports:
  - name: events
    table: events
    max_file_size: 256MiB
    destination: { type: s3, bucket: lake, region: us-east-1, prefix: raw/events, access_key_env: CHECK_ENV_KEY, secret_key_env: CHECK_ENV_SECRET }
`)
    const env = { CHECK_ENV_URL: "postgres://u@db/x", CHECK_ENV_KEY: "" }
    const refused = await runCli(["check", "-c", file], { env })
    expect(refused.code).toBe(1)
    expect(linesStarting(refused.stderr, "Error: ")).toEqual([
      "Error: exports[0].destination.access_key_env (line 6): names the environment variable CHECK_ENV_KEY, which is empty: rivet run would fail on it",
      "Error: exports[0].destination.secret_key_env (line 6): names the environment variable CHECK_ENV_SECRET, which is not set: rivet run would fail on it"
    ])
    expect(refused.stdout).toBe("")
    const linted = await runCli(["check", "-c", file, "--allow-missing-env"], { env })
    expect(linted.code, linted.stderr).toBe(0)
    expect(linesStarting(linted.stderr, "Warning: ")).toHaveLength(2)
    expect(linted.stdout).toBe(`OK: ${file}: 1 export(s) valid, 2 warnings\n`)
    const complete = await runCli(["check", "-c", file], { env: { ...env, CHECK_ENV_KEY: "AKIA", CHECK_ENV_SECRET: "s" } })
    expect(complete.code, complete.stderr).toBe(0)
    expect(complete.stderr).toBe("")
  })

  it("knows mode: cdc's keys: a typo inside cdc:, cdc: under another mode, a query and a bad slot name, in one pass (until_current: false is fine)", async () => {
    const file = config(`${source}
exports:
  - name: fine
    table: orders
    mode: cdc
    cdc: { slot: rivet_orders_x, publication: orders_pub, initial: none, until_current: true, rollover: 1000, max_events: 5000 }
    destination: { type: local, path: out/fine }
  - name: typo
    table: orders
    mode: cdc
    cdc: { slott: orders }
    destination: { type: local, path: out/typo }
  - name: not_cdc
    table: orders
    mode: incremental
    cursor_column: id
    cdc: { slot: orders }
    destination: { type: local, path: out/not_cdc }
  - name: query
    query: SELECT * FROM orders
    mode: cdc
    destination: { type: local, path: out/query }
  - name: continuous
    table: orders
    mode: cdc
    cdc: { until_current: false }
    destination: { type: local, path: out/continuous }
  - name: slot_name
    table: orders
    mode: cdc
    cdc: { slot: Orders-Slot }
    destination: { type: local, path: out/slot_name }
`)
    const result = await check(file)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr.split("\n").filter((line) => line !== "")).toEqual([
      "Error: exports[1].cdc.slott (line 11): unknown key 'slott'",
      "Hint: did you mean 'slot'?",
      "Error: exports[2].cdc (line 17): applies to mode: cdc only, but this export's mode is incremental",
      "Hint: set mode: cdc or remove cdc",
      "Error: exports[3].query (line 20): mode: cdc reads the changes of one table, named with table: (a query's rows have no change log)",
      "Hint: table: schema.name",
      'Error: exports[5].cdc.slot (line 31): "Orders-Slot" is not a replication slot name: PostgreSQL\'s are 1 to 63 lower-case ' +
        "letters, digits or underscores (e.g. rivet_orders)"
    ])
  })

  it("reports a missing config file as a usage error", async () => {
    const result = await check("/nonexistent/rivet.yaml")
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("Error: /nonexistent/rivet.yaml: cannot read the config file")
  })

  it("--help shows an example", async () => {
    const result = await runCli(["check", "--help"])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("Example:")
    expect(result.stdout).toContain("rivet check -c examples/quickstart.yaml")
  })
})
