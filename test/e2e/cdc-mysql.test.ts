import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import mysql from "mysql2/promise"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExports } from "../../src/api.js"
import { runCli } from "../support/cli.js"
import type { Manifest } from "../../src/core/manifest.js"
import { BINLOG_OPTIONS, startTestMariadb } from "../support/mariadb-server.js"
import { testMysqlBinlogUrl } from "../support/mysql.js"
import { TYPES_DDL } from "../plugins/sources/mysql/fixtures.js"
import { duckRows } from "./partition-support.js"

// mode: cdc on MariaDB's binary log (a server with log_bin, ROW, FULL row images and metadata: the one the test
// setup starts). The first run's snapshot and later runs' changes, read back with DuckDB, fold into exactly what a
// mode: full export of the table writes — for every type of the MySQL type fixture, and for 1 000 inserts, 300
// updates and 100 deletes over two runs; a column added between changes ends a run before it and the next run
// writes it; a purged position is a clear error.

const url = testMysqlBinlogUrl()
if (url === "") process.stderr.write(`SKIPPED ${path.basename(import.meta.filename)}: no MariaDB with a binary log\n`)

let db: mysql.Connection
const dirs: Array<string> = []
let serverIds = 4100

beforeAll(async () => {
  if (url === "") return
  db = await mysql.createConnection({ uri: url, multipleStatements: true })
})

afterAll(async () => {
  if (url === "") return
  await db.query("DROP TABLE IF EXISTS cm_types, cm_orders, cm_shape")
  await db.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const exportOf = (table: string, extra: Record<string, unknown> = {}, sourceUrl = url) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-mysql-"))
  dirs.push(dir)
  const serverId = serverIds++
  const config = (spec: Record<string, unknown>) => ({
    source: { type: "mysql", url: sourceUrl },
    exports: [{ name: table, table, format: "parquet", destination: { type: "local", path: "out" }, ...spec }]
  })
  const out = path.join(dir, "out")
  const run = async () => {
    const { cdc, ...rest } = extra
    const spec = { mode: "cdc", cdc: { server_id: serverId, ...(cdc as object | undefined) }, ...rest }
    const [result] = await runExports(config(spec) as never, { configDir: dir })
    return result!
  }
  /** A mode: full export of the table now, in a directory of its own: what the folded changes must equal. */
  const full = async () => {
    const fullDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-mysql-full-"))
    dirs.push(fullDir)
    const [result] = await runExports(config({ mode: "full" }) as never, { configDir: fullDir })
    expect(result!.status).toBe("success")
    const manifest = JSON.parse(fs.readFileSync(path.join(fullDir, "out", "manifest.json"), "utf8")) as Manifest
    return manifest.parts.map((part) => path.join(fullDir, "out", part.path))
  }
  return { out, run, full }
}

const changeFiles = (out: string) =>
  fs
    .readdirSync(path.join(out, "_manifests"))
    .filter((name) => !name.startsWith(".")) // a manifest being written is a dot-file beside it
    .sort()
    .flatMap((name) => (JSON.parse(fs.readFileSync(path.join(out, "_manifests", name), "utf8")) as Manifest).parts.map((part) => path.join(out, part.path)))

const list = (files: ReadonlyArray<string>) => `[${files.map((file) => `'${file}'`).join(", ")}]`

/** Every change in publishing order: runs, parts, rows. */
const changes = (files: ReadonlyArray<string>) =>
  `(SELECT *, list_position(${list(files)}, filename) AS _file, file_row_number AS _row FROM read_parquet(${list(files)}, filename = true, file_row_number = true, union_by_name = true))`

/** The table's columns as DuckDB prints them (every value as text), in key order. */
const asText = (columns: ReadonlyArray<string>) => columns.map((column) => `"${column}"::varchar AS "${column}"`).join(", ")

/** The changes folded by `id` (the last image of each, deletes removing), next to the full export's rows. */
const foldAndFull = async (out: string, fullFiles: ReadonlyArray<string>, columns: ReadonlyArray<string>) => {
  const folded = await duckRows(
    `SELECT ${asText(columns)} FROM ${changes(changeFiles(out))} QUALIFY row_number() OVER (PARTITION BY id ORDER BY _file DESC, _row DESC) = 1 AND __op <> 'delete' ORDER BY id`
  )
  const full = await duckRows(`SELECT ${asText(columns)} FROM read_parquet(${list(fullFiles)}) ORDER BY id`)
  return { folded, full }
}

const parquetTypes = async (files: ReadonlyArray<string>) =>
  (await duckRows(`DESCRIBE SELECT * FROM read_parquet(${list(files)}, union_by_name = true)`)).map((row) => `${String(row["column_name"])} ${String(row["column_type"])}`)

const TYPE_COLUMNS = [
  "id", "ti", "tiu", "b1", "si", "siu", "mi", "miu", "i", "iu", "bi", "biu", "d", "du", "f", "dbl", "bt", "ch", "vc", "tx",
  "bn", "vb", "bl", "e", "st", "dt", "dtm", "dt0", "ts", "tm", "y", "j"
]

describe.skipIf(url === "")("mode: cdc on MariaDB's binary log", () => {
  it("every type of the MySQL type fixture: snapshot rows, inserted, updated and deleted rows fold into the full export's values and types", async () => {
    await db.query(TYPES_DDL.replaceAll("mt_types", "cm_types"))
    const { out, run, full } = exportOf("cm_types")
    expect((await run()).status).toBe("success")
    // Copies of the fixture rows, row 1 updated to row 2's values (and back for row 2), row 3 deleted.
    const others = TYPE_COLUMNS.filter((column) => column !== "id")
    await db.query(`INSERT INTO cm_types SELECT id + 10, ${others.join(", ")} FROM cm_types`)
    await db.query(`UPDATE cm_types a JOIN cm_types b ON b.id = 12 SET ${others.map((c) => `a.${c} = b.${c}`).join(", ")} WHERE a.id = 1`)
    await db.query(`UPDATE cm_types a JOIN cm_types b ON b.id = 11 SET ${others.map((c) => `a.${c} = b.${c}`).join(", ")} WHERE a.id = 2`)
    await db.query("DELETE FROM cm_types WHERE id = 3")
    const second = await run()
    expect(second.status).toBe("success")
    expect(second.rows).toBe(3 + 2 + 1)
    const fullFiles = await full()
    const { folded, full: rows } = await foldAndFull(out, fullFiles, TYPE_COLUMNS)
    expect(folded).toHaveLength(5)
    expect(folded).toEqual(rows)
    // Change rows have the batch export's Parquet types, column for column.
    const changeTypes = await parquetTypes(changeFiles(out))
    expect(changeTypes.slice(0, 6)).toEqual([
      "__op VARCHAR", "__pos VARCHAR", "__seq BIGINT", "__commit_ts TIMESTAMP WITH TIME ZONE", "__txid BIGINT", "__unchanged VARCHAR[]"
    ])
    expect(changeTypes.slice(6)).toEqual(await parquetTypes(fullFiles))
  }, 60_000)

  it("a snapshot, then 1 000 inserts, 300 updates and 100 deletes over two runs: every change once, in log order, folding into the table", async () => {
    await db.query(`DROP TABLE IF EXISTS cm_orders;
      CREATE TABLE cm_orders (id bigint PRIMARY KEY, v int NOT NULL, note varchar(64), amount decimal(12,2), at datetime(6));
      INSERT INTO cm_orders SELECT seq, seq % 7, CONCAT('note ', seq), seq * 1.25, TIMESTAMP '2026-01-01 00:00:00.123456' + INTERVAL seq MINUTE FROM seq_1_to_200`)
    const { out, run, full } = exportOf("cm_orders", { cdc: { rollover: 400 } })
    const first = await run()
    expect(first.status).toBe("success")
    expect(first.rows).toBe(200)

    // 600 inserts in one transaction and 400 in 100 transactions, 300 updates, then 100 deletes: a second run takes
    // the first half of it, a third the rest.
    await db.query(`INSERT INTO cm_orders SELECT seq, seq % 7, CONCAT('note ', seq), seq * 1.25, NULL FROM seq_201_to_800`)
    for (let t = 0; t < 100; t++) {
      const base = 801 + t * 4
      await db.query(`INSERT INTO cm_orders SELECT seq, 1, 'batch', 0.5, NOW(6) FROM seq_${base}_to_${base + 3}`)
    }
    expect((await run()).rows).toBe(1000)
    await db.query("UPDATE cm_orders SET v = v + 100, note = CONCAT(note, ' (u)') WHERE id % 4 = 0")
    await db.query("DELETE FROM cm_orders WHERE id % 12 = 1")
    const third = await run()
    expect(third.status).toBe("success")
    expect(third.rows).toBe(300 + 100)

    const all = await duckRows(`SELECT __op AS op, __pos AS pos, __seq::int AS seq FROM ${changes(changeFiles(out))} ORDER BY _file, _row`)
    expect(all.filter((row) => row["op"] === "snapshot")).toHaveLength(200)
    expect(all.filter((row) => row["op"] === "insert")).toHaveLength(1000)
    expect(all.filter((row) => row["op"] === "update")).toHaveLength(300)
    expect(all.filter((row) => row["op"] === "delete")).toHaveLength(100)
    // Log order: positions never go back; within a transaction __seq counts from 0; no (__pos, __seq) twice.
    const positions = all.slice(200).map((row) => String(row["pos"]))
    expect([...positions].sort()).toEqual(positions)
    expect(new Set(all.slice(200).map((row) => `${String(row["pos"])}#${String(row["seq"])}`)).size).toBe(1400)
    const { folded, full: rows } = await foldAndFull(out, await full(), ["id", "v", "note", "amount", "at"])
    expect(folded).toHaveLength(1200 - 100)
    expect(folded).toEqual(rows)

    // No change since: a run publishes none and stays at the stored position.
    const idle = await run()
    expect(idle.status).toBe("success")
    expect(idle.rows).toBe(0)
  }, 60_000)

  it("a column added between changes ends the run before it; the next run writes the new column", async () => {
    await db.query(`DROP TABLE IF EXISTS cm_shape; CREATE TABLE cm_shape (id int PRIMARY KEY, note varchar(20)); INSERT INTO cm_shape VALUES (1, 'one')`)
    const { out, run } = exportOf("cm_shape")
    await run()
    await db.query("INSERT INTO cm_shape VALUES (2, 'two')")
    await db.query("ALTER TABLE cm_shape ADD COLUMN extra int")
    await db.query("INSERT INTO cm_shape VALUES (3, 'three', 42)")
    const before = await run()
    expect(before.status).toBe("success")
    expect(before.rows).toBe(1)
    const after = await run()
    expect(after.status).toBe("success")
    expect(await duckRows(`SELECT __op, id, note, extra FROM ${changes(changeFiles(out))} WHERE __op <> 'snapshot' ORDER BY _file, _row`)).toEqual([
      { __op: "insert", id: 2, note: "two", extra: null },
      { __op: "insert", id: 3, note: "three", extra: 42 }
    ])
  }, 60_000)

  it("rivet doctor checks the binary log settings, grants and server_id and says how far the published position is behind; rivet plan shows the positions and no slot", async () => {
    await db.query(`DROP TABLE IF EXISTS cm_ops; CREATE TABLE cm_ops (id int PRIMARY KEY, note varchar(20)); INSERT INTO cm_ops VALUES (1, 'one')`)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-mysql-ops-"))
    dirs.push(dir)
    const config = (serverId: number) =>
      JSON.stringify({
        source: { type: "mysql", url },
        exports: [{ name: "cm_ops", table: "cm_ops", mode: "cdc", cdc: { server_id: serverId }, format: "parquet", destination: { type: "local", path: "out" } }]
      })
    fs.writeFileSync(path.join(dir, "rivet.yaml"), config(serverIds++))
    expect((await runCli(["run", "-c", "rivet.yaml"], { cwd: dir })).code).toBe(0)
    await db.query("INSERT INTO cm_ops VALUES (2, 'two')")
    const doctor = await runCli(["doctor", "-c", "rivet.yaml"], { cwd: dir })
    expect(doctor.code, doctor.stdout).toBe(0)
    for (const line of ["log_bin): ON", "binlog_format): ROW", "binlog_row_image): FULL", "binlog_row_metadata): FULL", "replication privileges): the user may read"]) {
      expect(doctor.stdout).toContain(`[OK]  Change log cm_ops (${line}`)
    }
    expect(doctor.stdout).toMatch(/\[OK\] {2}Change log cm_ops \(published position\): binlog\.\d+:\d{12}(@[\d-]+)?: \d+ B of binary log behind the server/)
    expect(doctor.stdout).not.toContain("(slot)")
    const plan = await runCli(["plan", "-c", "rivet.yaml"], { cwd: dir })
    expect(plan.code, plan.stderr).toBe(0)
    expect(plan.stdout).toMatch(/changes: +after binlog\.\d+:\d{12}\S* up to binlog\.\d+:\d{12}/)
    expect(plan.stdout).not.toContain("slot:")
    // The server's own server_id is refused by doctor, naming the fix.
    const [[{ own }]] = (await db.query("SELECT @@GLOBAL.server_id AS own")) as unknown as [[{ own: number }]]
    fs.writeFileSync(path.join(dir, "rivet.yaml"), config(own))
    const clash = await runCli(["doctor", "-c", "rivet.yaml"], { cwd: dir })
    expect(clash.code).not.toBe(0)
    expect(clash.stdout).toContain(`[FAIL] Change log cm_ops (server_id): ${own} is the server's own server_id`)
    await db.query("DROP TABLE cm_ops")
  }, 60_000)

  it("a position purged from the server is an error saying so and how to start again; nothing is published", async () => {
    // A server of its own: purging the shared one's binary logs would pull them from under other files' runs.
    const server = await startTestMariadb(BINLOG_OPTIONS)
    const own = await mysql.createConnection({ uri: server.url, multipleStatements: true })
    try {
      await own.query("CREATE TABLE cm_purged (id int PRIMARY KEY); INSERT INTO cm_purged VALUES (1)")
      const { out, run } = exportOf("cm_purged", {}, server.url)
      await run()
      const published = fs.readFileSync(path.join(out, "manifest.json"), "utf8")
      await own.query("INSERT INTO cm_purged VALUES (2)")
      await own.query("FLUSH BINARY LOGS")
      // The server keeps a reader's dump thread until it next writes to it, and does not purge a file one reads.
      const [dumps] = (await own.query("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'")) as unknown as [Array<{ ID: number }>]
      for (const { ID } of dumps) await own.query(`KILL ${ID}`).catch(() => undefined)
      const logs = async () => ((await own.query("SHOW BINARY LOGS")) as unknown as [Array<{ Log_name: string }>])[0].map((log) => log.Log_name)
      const [first, last] = [(await logs())[0], (await logs()).at(-1)]
      await own.query(`PURGE BINARY LOGS TO '${last}'`)
      expect(await logs()).not.toContain(first)
      await expect(run()).rejects.toMatchObject({
        message: expect.stringMatching(/is no longer in the server's binary log .*purged/),
        hint: expect.stringContaining("rivet state reset -c <config> -e cm_purged")
      })
      expect(fs.readFileSync(path.join(out, "manifest.json"), "utf8")).toBe(published)
    } finally {
      await own.end()
      await server.stop()
    }
  }, 60_000)
})
