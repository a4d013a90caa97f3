import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExports } from "../../src/api.js"
import type { Manifest } from "../../src/core/manifest.js"
import { runCli } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { dropSlots, logicalReplication } from "../support/replication.js"
import { duckRows } from "./partition-support.js"

// The operations around mode: cdc on the test PostgreSQL (wal_level = logical), through the built CLI: rivet doctor
// and rivet plan on a live slot, rivet state reset dropping it, the first run refusing to publish a table without a
// replica identity — and the DuckDB query of docs/modes/cdc.md, run as written there, folding the change log into
// the table. Every slot and publication is dropped at the end (the prefix is no other test file's).

const PREFIX = "rivet_e2e_cops"
const TABLE = `${PREFIX}_orders`
const NO_KEY = `${PREFIX}_nokey`
const unavailable = await logicalReplication(testPgUrl())

let sql: postgres.Sql
let dir: string
let configFile: string

const exportSpec = (table: string, name: string) => ({
  name,
  table,
  mode: "cdc",
  cdc: { slot: table, publication: table },
  destination: { type: "local", path: `out/${name}` }
})

const run = async (table: string, name: string) => {
  const [result] = await runExports({ source: { type: "postgres", url: testPgUrl() }, exports: [exportSpec(table, name)] } as never, {
    configDir: dir
  })
  return result!
}

beforeAll(async () => {
  if (unavailable !== undefined) return
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await dropSlots(testPgUrl(), PREFIX)
  // Row 1's note is long enough to be TOASTed out of line: an update that leaves it alone does not carry it.
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}, ${NO_KEY};
    CREATE TABLE ${TABLE} (id int8 PRIMARY KEY, status text, note text);
    INSERT INTO ${TABLE} SELECT i, 'new', CASE WHEN i = 1 THEN (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g) ELSE 'note ' || i END
      FROM generate_series(1, 4) AS i;
    CREATE TABLE ${NO_KEY} (a int, b text); INSERT INTO ${NO_KEY} VALUES (1, 'x')`)
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-ops-"))
  configFile = path.join(dir, "rivet.yaml")
  fs.writeFileSync(
    configFile,
    `source: { type: postgres, url: '${testPgUrl()}' }\nexports:\n  - ${JSON.stringify(exportSpec(TABLE, "orders"))}\n`
  )
})

afterAll(async () => {
  if (unavailable !== undefined) return
  await dropSlots(testPgUrl(), PREFIX)
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}, ${NO_KEY}`)
  await sql.end()
  fs.rmSync(dir, { recursive: true, force: true })
})

const slotOf = async (slot: string) =>
  (await sql.unsafe(`SELECT confirmed_flush_lsn::text AS confirmed FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0]

const storedPosition = () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "out/orders/manifest.json"), "utf8")) as Manifest
  return manifest.source.cursor!.value
}

const POSITION = "[0-9A-F]{8}/[0-9A-F]{8}"
const SIZE = "\\d+(\\.\\d)? (B|KiB|MiB)"

/** The SQL block of docs/modes/cdc.md's "Folding the change log into the table", on the export's directory here. */
const foldQuery = (out: string): string => {
  const doc = fs.readFileSync(path.resolve(import.meta.dirname, "../../docs/modes/cdc.md"), "utf8")
  const section = doc.slice(doc.indexOf("## Folding the change log into the table"))
  const query = /```sql\n([\s\S]*?)```/.exec(section)?.[1]
  if (query === undefined) throw new Error("docs/modes/cdc.md: no sql block under 'Folding the change log into the table'")
  return query.replaceAll("'out/orders/", `'${out}/`)
}

describe.skipIf(unavailable !== undefined)("mode: cdc operations on PostgreSQL", () => {
  it("after a first run, rivet doctor (text, --json) and rivet plan show the slot, its position, the WAL it retains and the change columns", async () => {
    expect((await run(TABLE, "orders")).status).toBe("success")
    const stored = storedPosition()
    // The publication Rivet created publishes what it captures: not TRUNCATE.
    expect(
      (await sql.unsafe(`SELECT pubinsert, pubupdate, pubdelete, pubtruncate FROM pg_publication WHERE pubname = $1`, [TABLE]))[0]
    ).toEqual({ pubinsert: true, pubupdate: true, pubdelete: true, pubtruncate: false })
    await sql.unsafe(`UPDATE ${TABLE} SET status = 'paid' WHERE id = 2`)

    const [doctor, json, plan] = await Promise.all([
      runCli(["doctor", "-c", configFile]),
      runCli(["doctor", "-c", configFile, "--json"]),
      runCli(["plan", "-c", configFile])
    ])
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0)
    const lines = doctor.stdout.split("\n")
    const from = lines.indexOf("[OK]  Export orders")
    expect(lines.slice(from, from + 8)).toEqual([
      "[OK]  Export orders",
      "[OK]  Change log orders (wal_level): logical",
      "[OK]  Change log orders (replication privilege): the user may replicate",
      expect.stringMatching(/^\[OK\] {2}Change log orders \(replication slots\): \d+ of max_replication_slots = \d+ in use$/),
      "[OK]  Change log orders (replica identity): DEFAULT (primary key)",
      `[OK]  Change log orders (publication): ${TABLE} includes the table`,
      "[OK]  Change log orders (columns): 3 table column(s) after the 6 change columns",
      // Active while the run's walsender is still going away.
      expect.stringMatching(
        new RegExp(`^\\[OK\\] {2}Change log orders \\(slot\\): ${TABLE} \\((in)?active\\), confirmed at ${stored}, ${SIZE} of WAL retained$`)
      )
    ])
    expect(lines.at(-2)).toBe("All checks passed.")

    const report = JSON.parse(json.stdout) as { ok: boolean; checks: Array<Record<string, unknown>> }
    expect(report.ok).toBe(true)
    expect(report.checks.find((check) => check["name"] === "Change log orders (slot)")).toMatchObject({
      status: "ok",
      slot: { name: TABLE, confirmed: stored, retained_bytes: expect.any(Number) }
    })

    expect(plan.code, plan.stderr).toBe(0)
    expect(plan.stdout).toMatch(new RegExp(`\\n  slot: +${TABLE} \\(publication ${TABLE}\\): confirmed at ${stored}\\n`))
    expect(plan.stdout).toMatch(new RegExp(`\\n  changes: +after ${stored} up to ${POSITION}\\n  pending WAL: +${SIZE}\\n`))
    expect(plan.stdout).toMatch(
      /\n {2}columns: +9: __op string, __pos string, __seq int64, __commit_ts timestamptz,\n +__txid int64, __unchanged list<string>, id int64, status string, note string\n/
    )
    expect(plan.stdout).not.toContain("estimated rows")
  }, 60_000)

  it("the DuckDB query of docs/modes/cdc.md folds the change log into the table: updates, deletes, a TOASTed value an update left alone, a NULL written", async () => {
    await sql.unsafe(`UPDATE ${TABLE} SET status = 'shipped' WHERE id = 1`) // note (TOASTed) left alone
    await sql.unsafe(`DELETE FROM ${TABLE} WHERE id = 3`)
    await sql.unsafe(`INSERT INTO ${TABLE} VALUES (5, 'new', 'note 5'), (6, 'new', 'note 6')`)
    await sql.unsafe(`UPDATE ${TABLE} SET status = 'paid', note = NULL WHERE id = 5`)
    await sql.unsafe(`UPDATE ${TABLE} SET status = 'shipped' WHERE id = 5`)
    expect((await run(TABLE, "orders")).status).toBe("success")

    const out = path.join(dir, "out/orders")
    const unchanged = await duckRows(`SELECT __unchanged::varchar AS unchanged FROM read_parquet('${out}/*changes*.parquet') WHERE id = 1`)
    expect(unchanged).toEqual([{ unchanged: "[note]" }])
    const folded = await duckRows(foldQuery(out))
    const table = (await sql.unsafe(`SELECT id, status, note FROM ${TABLE} ORDER BY id`)).map((row) => ({ ...row }))
    expect(table.map((row) => row["id"])).toEqual(["1", "2", "4", "5", "6"])
    expect(folded).toEqual(table)
  }, 60_000)

  it("rivet state reset drops the slot and says so, then says nothing more; an unreachable source fails it and resets nothing", async () => {
    const unreachable = path.join(dir, "unreachable.yaml")
    const url = new URL(testPgUrl())
    url.port = "1"
    fs.writeFileSync(unreachable, fs.readFileSync(configFile, "utf8").replace(testPgUrl(), url.toString()))
    const refused = await runCli(["state", "reset", "-c", unreachable, "-e", "orders"])
    expect(refused.code).toBe(2)
    expect(refused.stdout).toBe("")
    expect(refused.stderr).toContain(`Error: cannot reach the source to drop replication slot ${TABLE} of export 'orders' (mode: cdc): `)
    expect(refused.stderr).toContain("; nothing was reset")
    expect(await slotOf(TABLE)).toBeDefined()

    const reset = await runCli(["state", "reset", "-c", configFile, "-e", "orders"])
    expect(reset.code, reset.stderr).toBe(0)
    expect(reset.stdout).toBe(
      "State reset for export 'orders': cursor cleared, 0 unfinished run(s) abandoned.\n" +
        `Dropped replication slot ${TABLE}: the next run starts from a new snapshot.\n`
    )
    expect(await slotOf(TABLE)).toBeUndefined()
    const again = await runCli(["state", "reset", "-c", configFile, "-e", "orders"])
    expect(again.stdout).toBe("State reset for export 'orders': no cursor was set, 0 unfinished run(s) abandoned.\n")
  }, 60_000)

  it("the first run refuses to publish a table without a replica identity, which would break its UPDATE and DELETE", async () => {
    await expect(run(NO_KEY, "nokey")).rejects.toThrow(
      `table public.${NO_KEY} has no replica identity (no primary key): publishing it for mode: cdc would make PostgreSQL refuse its UPDATE and DELETE statements`
    )
    expect(await sql.unsafe(`SELECT 1 FROM pg_publication WHERE pubname = $1`, [NO_KEY])).toHaveLength(0)
    await sql.unsafe(`UPDATE ${NO_KEY} SET b = 'y'`)
  }, 60_000)
})
