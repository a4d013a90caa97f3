import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ChildProcess } from "node:child_process"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { runExports } from "../../src/api.js"
import { SourceError } from "../../src/core/errors.js"
import type { BatchTransform } from "../../src/core/plugin.js"
import { runCli } from "../support/cli.js"
import type { Manifest } from "../../src/core/manifest.js"
import { testPgUrl } from "../support/pg.js"
import { dropSlots, logicalReplication } from "../support/replication.js"
import { duckRows } from "./partition-support.js"

// mode: cdc against the test PostgreSQL (wal_level = logical): the first run's snapshot and later runs' changes,
// read back with DuckDB, fold into exactly the table's rows; the published position is stored, then confirmed to the
// slot; a slot dropped from outside is a clear error. Every slot and publication is dropped at the end.

const PREFIX = "rivet_e2e_cdc"
const unavailable = await logicalReplication(testPgUrl())

let sql: postgres.Sql
const dirs: Array<string> = []

beforeAll(async () => {
  if (unavailable !== undefined) return
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await dropSlots(testPgUrl(), PREFIX)
})

afterAll(async () => {
  if (unavailable !== undefined) return
  await dropSlots(testPgUrl(), PREFIX)
  await sql.unsafe(`DROP TABLE IF EXISTS ${PREFIX}_orders, ${PREFIX}_gone, ${PREFIX}_follow, ${PREFIX}_shape, ${PREFIX}_sa, ${PREFIX}_sb, ${PREFIX}_chunks`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const COLUMNS = `id int8 PRIMARY KEY, amount numeric(12,2), note text, at timestamptz, doc jsonb, flag bool, ref uuid, tags text[], big text`

const rowValues = (from: number, to: number) =>
  `SELECT i, (i * 1.25)::numeric(12,2), 'note ' || i, timestamptz '2026-01-01 00:00:00.123456+00' + i * interval '1 minute',
     jsonb_build_object('i', i, 'even', i % 2 = 0), i % 3 = 0, md5(i::text)::uuid, ARRAY['t' || i, NULL], NULL
   FROM generate_series(${from}, ${to}) AS i`

const exportOf = (table: string, extra: Record<string, unknown> = {}) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-"))
  dirs.push(dir)
  const config = {
    source: { type: "postgres", url: testPgUrl() },
    exports: [
      {
        name: table,
        table,
        mode: "cdc",
        cdc: { slot: table, publication: table },
        format: "parquet",
        destination: { type: "local", path: "out" },
        ...extra
      }
    ]
  }
  const out = path.join(dir, "out")
  const run = async () => {
    const [result] = await runExports(config as never, { configDir: dir })
    return result!
  }
  return { dir, out, run }
}

const keptManifests = (out: string): Array<Manifest> =>
  fs
    .readdirSync(path.join(out, "_manifests"))
    .filter((name) => !name.startsWith(".")) // a manifest being written is a dot-file beside it
    .sort()
    .map((name) => JSON.parse(fs.readFileSync(path.join(out, "_manifests", name), "utf8")) as Manifest)

/** Every change of every published run, in manifest order (runs in order, parts in order, rows in order). */
const publishedChanges = async (out: string) => {
  const files = keptManifests(out).flatMap((manifest) => manifest.parts.map((part) => path.join(out, part.path)))
  if (files.length === 0) return []
  return duckRows(
    `SELECT __op, __pos, __seq, id, amount::varchar AS amount, note, "at"::varchar AS "at", doc::varchar AS doc, flag, ref::varchar AS ref,
       tags::varchar AS tags, __unchanged::varchar AS unchanged
     FROM read_parquet([${files.map((file) => `'${file}'`).join(", ")}], file_row_number = true, filename = true)
     ORDER BY list_position([${files.map((file) => `'${file}'`).join(", ")}], filename), file_row_number`
  )
}

const tableNow = async (table: string) =>
  (
    await sql.unsafe(
      `SELECT id::text, amount::text, note, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') AS at, doc::text, flag, ref::text
       FROM ${table} ORDER BY ${table}.id`
    )
  ).map((row) => ({ ...row }))

/** Folds the change log into the table it describes: the last image of each key, deletes removing it. */
const fold = (changes: ReadonlyArray<Record<string, unknown>>) => {
  const rows = new Map<string, Record<string, unknown>>()
  for (const change of changes) {
    const id = String(change["id"])
    if (change["__op"] === "delete") rows.delete(id)
    else rows.set(id, change)
  }
  return [...rows.values()]
    .sort((a, b) => Number(a["id"]) - Number(b["id"]))
    .map((row) => ({
      id: String(row["id"]),
      amount: String(row["amount"]),
      note: row["note"],
      at: String(row["at"]).replace(/\+00$/, ""),
      doc: row["doc"],
      flag: row["flag"],
      ref: row["ref"]
    }))
}

const slotConfirmed = async (slot: string) =>
  (await sql.unsafe(`SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1`, [slot]))[0]?.["lsn"]

describe.skipIf(unavailable !== undefined)("mode: cdc on PostgreSQL", () => {
  it("snapshot, then 1 000 inserts, 300 updates and 100 deletes over two runs: the change log folds into the table", async () => {
    const table = `${PREFIX}_orders`
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (${COLUMNS}); INSERT INTO ${table} ${rowValues(1, 200)}`)
    const { out, run } = exportOf(table, { cdc: { slot: table, publication: table, rollover: 400 } })

    const first = await run()
    expect(first.status).toBe("success")
    let changes = await publishedChanges(out)
    expect(changes).toHaveLength(200)
    expect(new Set(changes.map((change) => change["__op"]))).toEqual(new Set(["snapshot"]))
    expect(fold(changes)).toEqual(await tableNow(table))

    // Changes in 1 000-row, 100-row and single-row transactions, some rows changed twice.
    await sql.unsafe(`INSERT INTO ${table} ${rowValues(201, 1200)}`)
    await sql.unsafe(`UPDATE ${table} SET amount = amount + 1, note = note || ' (u)', doc = doc || '{"u": true}' WHERE id % 4 = 0`)
    await sql.unsafe(`DELETE FROM ${table} WHERE id % 12 = 1`)
    await sql.unsafe(`UPDATE ${table} SET flag = NOT flag WHERE id = 4`)
    const second = await run()
    expect(second.status).toBe("success")
    changes = await publishedChanges(out)
    const ops = changes.slice(200).map((change) => change["__op"])
    expect(ops.filter((op) => op === "insert")).toHaveLength(1000)
    expect(ops.filter((op) => op === "update")).toHaveLength(301)
    expect(ops.filter((op) => op === "delete")).toHaveLength(100)
    // In commit order: positions never go back, and within a transaction __seq counts up from 0.
    const positions = changes.slice(200).map((change) => String(change["__pos"]))
    expect([...positions].sort()).toEqual(positions)
    expect(fold(changes)).toEqual(await tableNow(table))
    // rollover: 400 changes per part at most.
    const parts = keptManifests(out).flatMap((manifest) => manifest.parts)
    expect(Math.max(...parts.map((part) => part.rows))).toBeLessThanOrEqual(400)

    // The published position is stored, then confirmed to the slot; a run with nothing new writes nothing new.
    const stored = await slotConfirmed(table)
    const third = await run()
    expect(third.rows).toBe(0)
    expect((await publishedChanges(out)).length).toBe(changes.length)
    expect(await slotConfirmed(table)).not.toBeUndefined()
    expect(stored).not.toBeUndefined()
  }, 120_000)

  it("two exports sharing a slot: one stream, each export its own table's changes; one export failing (before or while reading) leaves the other to publish, and it catches up exactly once", async () => {
    const [a, b] = [`${PREFIX}_sa`, `${PREFIX}_sb`]
    const slot = `${PREFIX}_shared`
    for (const table of [a, b]) await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (${COLUMNS}); INSERT INTO ${table} ${rowValues(1, 100)}`)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-"))
    dirs.push(dir)
    const exportTo = (table: string) => ({ name: table, table, mode: "cdc", cdc: { slot, rollover: 300 }, format: "parquet", destination: { type: "local", path: table } })
    const config = { source: { type: "postgres", url: testPgUrl() }, exports: [exportTo(a), exportTo(b)] }
    const run = () => runExports(config as never, { configDir: dir })
    const out = (table: string) => path.join(dir, table)
    const first = await run()
    expect(first.map((result) => [result.exportName, result.status, result.rows])).toEqual([[a, "success", 100], [b, "success", 100]])
    // Changes to both tables, some in one transaction together.
    await sql.unsafe(`INSERT INTO ${a} ${rowValues(101, 400)}`)
    await sql.begin(async (tx) => {
      await tx.unsafe(`INSERT INTO ${b} ${rowValues(101, 250)}`)
      await tx.unsafe(`UPDATE ${a} SET note = note || ' (u)' WHERE id % 5 = 0`)
    })
    await sql.unsafe(`DELETE FROM ${b} WHERE id % 7 = 0`)
    const second = await run()
    expect(second.map((result) => result.status)).toEqual(["success", "success"])
    // One slot and one publication for both tables (none named after either export).
    const slots = await sql.unsafe(`SELECT slot_name::text AS s FROM pg_replication_slots WHERE slot_name IN ($1, $2, $3)`, [slot, a, b])
    expect(slots.map((row) => row["s"])).toEqual([slot])
    const publication = await sql.unsafe(`SELECT tablename::text AS t FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1`, [slot])
    expect(publication.map((row) => row["t"])).toEqual([a, b])
    for (const table of [a, b]) expect(fold(await publishedChanges(out(table)))).toEqual(await tableNow(table))
    expect((await publishedChanges(out(a))).length).toBe(100 + 300 + 80)
    expect((await publishedChanges(out(b))).length).toBe(100 + 150 + Math.floor(250 / 7))

    // b's destination breaks (a file where its directory was): a publishes, b fails, the slot stays at b's position.
    await sql.unsafe(`INSERT INTO ${a} ${rowValues(401, 450)}`)
    await sql.unsafe(`INSERT INTO ${b} ${rowValues(251, 300)}`)
    const confirmed = await slotConfirmed(slot)
    fs.renameSync(out(b), `${out(b)}.kept`)
    fs.writeFileSync(out(b), "not a directory")
    await expect(run()).rejects.toThrow()
    expect(await slotConfirmed(slot)).toBe(confirmed)
    fs.rmSync(out(b))
    fs.renameSync(`${out(b)}.kept`, out(b))
    // The next run reads from b's position: b gets its 50 rows and more, a only what is new to it.
    await sql.unsafe(`INSERT INTO ${a} ${rowValues(451, 460)}`)
    const fourth = await run()
    expect(fourth.map((result) => [result.status, result.rows])).toEqual([["success", 10], ["success", 50]])
    for (const table of [a, b]) {
      const changes = await publishedChanges(out(table))
      expect(fold(changes)).toEqual(await tableNow(table))
      const keys = changes.filter((change) => change["__op"] !== "snapshot").map((change) => `${String(change["__pos"])}/${String(change["__seq"])}`)
      expect(new Set(keys).size).toBe(keys.length)
    }
    expect(await slotConfirmed(slot)).not.toBe(confirmed)

    // b's run gives up mid-stream (a transform in code fails on its first batch): a reads on without it, publishes.
    await sql.unsafe(`INSERT INTO ${a} ${rowValues(461, 470)}`)
    await sql.unsafe(`INSERT INTO ${b} ${rowValues(301, 1300)}`)
    const before = (await publishedChanges(out(a))).length
    const givesUp: BatchTransform = (input) => ({
      schema: input.schema,
      batches: Stream.mapEffect(input.batches, () => Effect.fail(new SourceError({ source: "test", message: "b gives up", retryable: false })))
    })
    await expect(runExports(config as never, { configDir: dir, transforms: { [b]: givesUp } })).rejects.toThrow("b gives up")
    expect((await publishedChanges(out(a))).length).toBe(before + 10)
    const sixth = await run()
    expect(sixth.map((result) => [result.status, result.rows])).toEqual([["success", 0], ["success", 1000]])
    for (const table of [a, b]) expect(fold(await publishedChanges(out(table)))).toEqual(await tableNow(table))
  }, 120_000)

  it("the first run's snapshot in chunks (chunk_column, chunk_size, parallel 2) on the slot's snapshot: every row once, NULL keys too, then the changes", async () => {
    const table = `${PREFIX}_chunks`
    // k runs against the rows' physical order.
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id int8 PRIMARY KEY, k int8, note text);
      INSERT INTO ${table} SELECT i, CASE WHEN i % 500 = 0 THEN NULL ELSE 5001 - i END, 'row ' || i FROM generate_series(1, 5000) AS i`)
    const { out, run } = exportOf(table, { chunk_column: "k", chunk_size: 700, parallel: 2 })
    const rows = async () => {
      const files = keptManifests(out).flatMap((manifest) => manifest.parts.map((part) => `'${path.join(out, part.path)}'`))
      return duckRows(
        `SELECT __op, __seq, id, k, note FROM read_parquet([${files.join(", ")}], file_row_number = true, filename = true)
         ORDER BY list_position([${files.join(", ")}], filename), file_row_number`
      )
    }
    expect((await run()).status).toBe("success")
    const snapshot = await rows()
    expect(snapshot).toHaveLength(5000)
    expect(new Set(snapshot.map((row) => Number(row["id"]))).size).toBe(5000)
    expect(snapshot.filter((row) => row["k"] === null)).toHaveLength(10)
    // One statement returns k falling from 5000 to 1; pieces, in whatever order they finish, rise at some boundary.
    const ks = [...snapshot].sort((x, y) => Number(x["__seq"]) - Number(y["__seq"])).flatMap((row) => (row["k"] === null ? [] : [Number(row["k"])]))
    expect(ks.some((k, i) => i > 0 && k > ks[i - 1]!)).toBe(true)

    await sql.unsafe(`INSERT INTO ${table} SELECT i, i, 'new ' || i FROM generate_series(5001, 5100) AS i`)
    await sql.unsafe(`UPDATE ${table} SET note = note || ' (u)' WHERE id % 100 = 1`)
    await sql.unsafe(`DELETE FROM ${table} WHERE id % 250 = 2`)
    expect((await run()).status).toBe("success")
    const folded = new Map<number, unknown>()
    for (const row of await rows()) {
      if (row["__op"] === "delete") folded.delete(Number(row["id"]))
      else folded.set(Number(row["id"]), row["note"])
    }
    const now = await sql.unsafe(`SELECT id::int AS id, note FROM ${table} ORDER BY id`)
    expect([...folded.entries()].sort((x, y) => x[0] - y[0])).toEqual(now.map((row) => [row["id"], row["note"]]))
  }, 120_000)

    it("a slot dropped from outside is an error naming it and the way out; nothing is published", async () => {
    const table = `${PREFIX}_gone`
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (${COLUMNS}); INSERT INTO ${table} ${rowValues(1, 10)}`)
    const { out, run } = exportOf(table)
    expect((await run()).status).toBe("success")
    await sql.unsafe(`INSERT INTO ${table} ${rowValues(11, 20)}`)
    await dropSlots(testPgUrl(), table)
    const before = keptManifests(out).length
    await expect(run()).rejects.toThrow(new RegExp(`replication slot ${table} no longer exists: the changes after position [0-9A-F/]+ cannot be read`))
    expect(keptManifests(out).length).toBe(before)
  }, 60_000)

  it("--follow publishes a window every commit_interval while changes arrive; SIGTERM publishes the open one and exits 0", async () => {
    const table = `${PREFIX}_follow`
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (${COLUMNS}); INSERT INTO ${table} ${rowValues(1, 50)}`)
    const { dir, out } = exportOf(table)
    const config = path.join(dir, "rivet.yaml")
    fs.writeFileSync(
      config,
      JSON.stringify({
        source: { type: "postgres", url: testPgUrl() },
        exports: [
          {
            name: table,
            table,
            mode: "cdc",
            cdc: { slot: table, publication: table, commit_interval: "1s" },
            format: "parquet",
            destination: { type: "local", path: "out" }
          }
        ]
      })
    )
    let child: ChildProcess | undefined
    const running = runCli(["run", "-c", config, "--follow"], { cwd: dir, onStart: (started) => (child = started) })
    const windows = () => (fs.existsSync(path.join(out, "_manifests")) ? keptManifests(out).length : 0)
    const until = async (check: () => boolean) => {
      for (let waited = 0; !check(); waited += 100) {
        if (waited > 30_000) throw new Error(`timed out; ${windows()} windows published`)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    await until(() => windows() >= 1)
    for (let batch = 0; batch < 3; batch++) {
      await sql.unsafe(`INSERT INTO ${table} ${rowValues(51 + batch * 100, 150 + batch * 100)}`)
      await sql.unsafe(`UPDATE ${table} SET amount = amount * 2 WHERE id % 7 = ${batch}`)
      const before = windows()
      await until(() => windows() > before)
    }
    await sql.unsafe(`DELETE FROM ${table} WHERE id % 5 = 0`)
    child!.kill("SIGTERM")
    const result = await running
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toContain("publishing the windows being read")
    expect(windows()).toBeGreaterThanOrEqual(4)
    // The delete may not have reached the window open at the signal: a run up to the current position catches up.
    const caughtUp = await runCli(["run", "-c", config], { cwd: dir })
    expect(caughtUp.code, caughtUp.stderr).toBe(0)
    const changes = await publishedChanges(out)
    const keys = changes.filter((change) => change["__op"] !== "snapshot").map((change) => `${change["__pos"]}/${change["__seq"]}`)
    expect(new Set(keys).size).toBe(keys.length)
    expect(fold(changes)).toEqual(await tableNow(table))
  }, 90_000)

  it("unchanged TOAST values are listed in __unchanged (never a silent NULL), filled under REPLICA IDENTITY FULL; a column added mid-stream starts the next run", async () => {
    const table = `${PREFIX}_shape`
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (${COLUMNS}); INSERT INTO ${table} ${rowValues(1, 3)}`)
    const { out, run } = exportOf(table)
    await run()
    // Random text does not compress: stored out of line (TOAST), so an update of another column leaves it unchanged.
    await sql.unsafe(`UPDATE ${table} SET big = (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 300)) WHERE id = 1`)
    await sql.unsafe(`UPDATE ${table} SET note = 'default identity' WHERE id = 1`)
    await sql.unsafe(`ALTER TABLE ${table} REPLICA IDENTITY FULL`)
    await sql.unsafe(`UPDATE ${table} SET note = 'full identity' WHERE id = 1`)
    await sql.unsafe(`ALTER TABLE ${table} ADD COLUMN extra int4`)
    await sql.unsafe(`INSERT INTO ${table} (id, note, extra) VALUES (100, 'after the new column', 42)`)
    await run()
    const files = () => keptManifests(out).flatMap((manifest) => manifest.parts.map((part) => `'${path.join(out, part.path)}'`))
    const updates = await duckRows(
      `SELECT note, length(big) AS big, __unchanged::varchar AS unchanged FROM read_parquet([${files().join(", ")}], union_by_name = true) WHERE __op = 'update' ORDER BY __pos, __seq`
    )
    expect(updates).toEqual([
      { note: "note 1", big: "9600", unchanged: null },
      { note: "default identity", big: null, unchanged: "[big]" },
      { note: "full identity", big: "9600", unchanged: null }
    ])
    // The insert after ALTER TABLE was not in that run: it ended before the new shape; the next run has it.
    expect((await duckRows(`SELECT count(*) AS n FROM read_parquet([${files().join(", ")}], union_by_name = true) WHERE id = 100`))[0]).toEqual({ n: "0" })
    await run()
    expect(await duckRows(`SELECT __op, extra FROM read_parquet([${files().join(", ")}], union_by_name = true) WHERE id = 100`)).toEqual([
      { __op: "insert", extra: 42 }
    ])
  }, 60_000)
})
