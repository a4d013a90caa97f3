import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { STATE_FILE_NAME, StateStore } from "../../../src/state/store.js"
import { runCli, writeConfig } from "../../support/cli.js"

// The source's URL variable is never set: state commands must not connect to the source.
const CONFIG = `source: { type: postgres, url_env: RIVET_STATE_CLI_UNSET_URL }
exports:
  - { name: orders, table: orders, destination: { type: local, path: out/orders } }
  - { name: customers, table: customers, destination: { type: local, path: out/customers } }
  - { name: audit, table: audit, destination: { type: local, path: out/audit } }
`

const dirs: Array<string> = []
afterAll(() => dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })))

const freshConfig = () => {
  const config = writeConfig(CONFIG)
  dirs.push(path.dirname(config))
  return { config, stateFile: path.join(path.dirname(config), STATE_FILE_NAME) }
}

/** Two runs of `orders` (the second with a cursor and two files), a failed checkpointed `customers` run, and
 * a run of `legacy`, an export that is no longer in the config. */
const seed = (stateFile: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const s = yield* StateStore
      const base = { mode: "incremental", status: "running", rows: 0, parts: 0, bytes: 0, checkpointed: false } as const
      yield* s.beginRun({ ...base, runId: "orders_20261201T100000.000", exportName: "orders", startedAt: "2026-12-01T10:00:00.000Z" })
      yield* s.finishRun("orders_20261201T100000.000", { status: "success", finishedAt: "2026-12-01T10:00:05.000Z", rows: 100, parts: 1, bytes: 5000 }, {
        parts: [{ path: "orders_20261201_100000_000.parquet", rows: 100, size_bytes: 5000, content_fingerprint: "sha256:aa" }]
      })
      yield* Effect.sleep("10 millis")
      yield* s.beginRun({ ...base, runId: "orders_20261202T100000.000", exportName: "orders", startedAt: "2026-12-02T10:00:00.000Z" })
      yield* s.finishRun("orders_20261202T100000.000", { status: "success", finishedAt: "2026-12-02T10:00:09.000Z", rows: 1234567, parts: 2, bytes: 3_000_000_000 }, {
        parts: [
          { path: "orders_20261202_100000_000_part0.parquet", rows: 1000000, size_bytes: 2_500_000_000, content_fingerprint: "sha256:bb" },
          { path: "orders_20261202_100000_000_part1.parquet", rows: 234567, size_bytes: 500_000_000, content_fingerprint: "sha256:cc" }
        ],
        cursor: { column: "updated_at", value: "2026-12-02T09:59:59.999999Z", type: "timestamptz" }
      })
      yield* s.beginRun({ ...base, runId: "customers_1", exportName: "customers", mode: "chunked", startedAt: "2026-12-03T10:00:00.000Z", checkpointed: true })
      yield* s.finishRun("customers_1", { status: "failed", finishedAt: "2026-12-03T10:01:00.000Z", rows: 0, parts: 0, bytes: 0, error: "boom" })
      yield* s.beginRun({ ...base, runId: "legacy_1", exportName: "legacy", startedAt: "2026-12-04T10:00:00.000Z" })
    }).pipe(Effect.provide(sqliteStateLayer(stateFile)))
  )

const readState = <A>(stateFile: string, read: (s: typeof StateStore.Service) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.flatMap(StateStore, read).pipe(Effect.provide(sqliteStateLayer(stateFile))))

// Every CLI start boots Node and loads the config's plugins; on a busy machine that takes seconds, hence the timeout.
describe("rivet state", { timeout: 120_000 }, () => {
  it("show: one aligned line per export of the config that has state", async () => {
    const { config, stateFile } = freshConfig()
    await seed(stateFile)
    const result = await runCli(["state", "show", "-c", config])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout).toBe(
      [
        "EXPORT     CURSOR                                    LAST RUN                  STATUS   ROWS",
        "orders     updated_at > 2026-12-02T09:59:59.999999Z  2026-12-02T10:00:00.000Z  success  1,234,567",
        "customers  -                                         2026-12-03T10:00:00.000Z  failed   0",
        ""
      ].join("\n")
    )
    const one = await runCli(["state", "show", "-c", config, "-e", "customers"])
    expect(one.stdout.split("\n")[1]).toMatch(/^customers\s+-\s+2026-12-03/)
    expect(one.stdout).not.toContain("orders")
  })

  it("show --json: machine output, [] when empty", async () => {
    const { config, stateFile } = freshConfig()
    await seed(stateFile)
    const result = await runCli(["state", "show", "-c", config, "--json"])
    expect(result.code).toBe(0)
    const parsed = JSON.parse(result.stdout) as Array<Record<string, unknown>>
    expect(parsed.map((entry) => entry["export_name"])).toEqual(["orders", "customers"])
    expect(parsed[0]).toMatchObject({
      cursor: { column: "updated_at", value: "2026-12-02T09:59:59.999999Z", type: "timestamptz" },
      last_run: { run_id: "orders_20261202T100000.000", status: "success", rows: 1234567, bytes: 3_000_000_000 }
    })
    expect(parsed[1]).toMatchObject({ cursor: null, last_run: { status: "failed", error: "boom", checkpointed: true } })
    const audit = await runCli(["state", "show", "-c", config, "-e", "audit", "--json"])
    expect(audit.stdout).toBe("[]\n")
  })

  it("files: newest first, limited, scoped to the config's exports; --json", async () => {
    const { config, stateFile } = freshConfig()
    await seed(stateFile)
    const result = await runCli(["state", "files", "-c", config])
    expect(result.code).toBe(0)
    const lines = result.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^RUN ID\s+FILE\s+ROWS\s+BYTES\s+COMMITTED$/)
    expect(lines.slice(1).map((line) => line.split(/\s+/)[1])).toEqual([
      "orders_20261202_100000_000_part0.parquet",
      "orders_20261202_100000_000_part1.parquet",
      "orders_20261201_100000_000.parquet"
    ])
    expect(lines[1]).toMatch(/^orders_20261202T100000\.000\s+\S+\s+1,000,000\s+2,500,000,000\s+\d{4}-\d\d-\d\dT/)

    const limited = await runCli(["state", "files", "-c", config, "--limit", "1", "--json"])
    const parsed = JSON.parse(limited.stdout) as Array<Record<string, unknown>>
    expect(parsed).toHaveLength(1)
    expect(parsed[0]).toMatchObject({
      run_id: "orders_20261202T100000.000",
      export_name: "orders",
      path: "orders_20261202_100000_000_part0.parquet",
      rows: 1000000,
      size_bytes: 2_500_000_000,
      content_fingerprint: "sha256:bb"
    })
    const none = await runCli(["state", "files", "-c", config, "-e", "customers"])
    expect(none.stdout).toBe("No files recorded yet.\n")
  })

  it("reset -e: clears the cursor, abandons unfinished runs, keeps the journal", async () => {
    const { config, stateFile } = freshConfig()
    await seed(stateFile)
    const orders = await runCli(["state", "reset", "-c", config, "-e", "orders"])
    expect(orders.code).toBe(0)
    expect(orders.stdout).toBe("State reset for export 'orders': cursor cleared, 0 unfinished run(s) abandoned.\n")
    const customers = await runCli(["state", "reset", "-c", config, "-e", "customers"])
    expect(customers.stdout).toBe("State reset for export 'customers': no cursor was set, 1 unfinished run(s) abandoned.\n")
    const after = await readState(stateFile, (s) =>
      Effect.all({ cursor: s.cursor("orders"), customers: s.run("customers_1"), runs: s.runs(undefined, 10) })
    )
    expect(after.cursor).toEqual(Option.none())
    expect(Option.getOrThrow(after.customers).status).toBe("abandoned")
    expect(after.runs).toHaveLength(4)
  })

  it("an unknown export is an error listing the known ones (exit 1); reset requires -e", async () => {
    const { config, stateFile } = freshConfig()
    await seed(stateFile)
    const unknown = [["state", "reset", "-c", config, "-e", "ordrs"], ["state", "show", "-c", config, "-e", "ordrs"]]
    for (const result of await Promise.all(unknown.map((args) => runCli(args)))) {
      expect(result.code).toBe(1)
      expect(result.stdout).toBe("")
      expect(result.stderr).toContain("Error: --export: no export named 'ordrs'")
      expect(result.stderr).toContain("orders, customers, audit")
    }
    const missing = await runCli(["state", "reset", "-c", config])
    expect(missing.code).toBe(1)
    expect(Option.getOrThrow(await readState(stateFile, (s) => s.cursor("orders"))).column).toBe("updated_at")
  })

  it("with no state yet: friendly messages and no state file created", async () => {
    const { config, stateFile } = freshConfig()
    const show = await runCli(["state", "show", "-c", config])
    expect(show.code).toBe(0)
    expect(show.stdout).toBe(`No state recorded yet for ${config}. Run \`rivet run -c ${config}\` first.\n`)
    expect((await runCli(["state", "files", "-c", config, "--json"])).stdout).toBe("[]\n")
    const reset = await runCli(["state", "reset", "-c", config, "-e", "orders"])
    expect(reset.stdout).toBe("State reset for export 'orders': no cursor was set, 0 unfinished run(s) abandoned.\n")
    expect(fs.existsSync(stateFile)).toBe(false)
  })

  it("RIVET_STATE_URL that is not PostgreSQL: one error naming the variable, exit 1", async () => {
    const { config } = freshConfig()
    const result = await runCli(["state", "show", "-c", config], { env: { RIVET_STATE_URL: "sqlite:///tmp/x.db" } })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("Error: RIVET_STATE_URL must be a PostgreSQL URL")
    expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/)
  })

  it("--help shows an example for every subcommand", async () => {
    const result = await runCli(["state", "--help"])
    expect(result.code).toBe(0)
    for (const sub of ["show", "files", "reset"]) expect(result.stdout).toContain(`rivet state ${sub} -c export.yaml`)
  })
})
