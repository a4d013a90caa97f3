import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { adminConnection, noMysql, testMysqlUrl } from "../support/mysql.js"
import { type KillPoint, runAndKill, verifyDestination } from "./crash-support.js"

// SIGKILL `rivet run` of a checkpointed export from MySQL, then `--resume`: every row exactly once (the same checks
// as the PostgreSQL crash tests, on a table of the same shape: id,label,amount,note with a 256-hex label).

let sourceIds: Array<number> = []
const configDirs: Array<string> = []

describe.skipIf(noMysql())("mysql source: SIGKILL mid-run, then --resume (CLI)", () => {
  beforeAll(async () => {
    const admin = await adminConnection()
    try {
      await admin.query(`
        DROP TABLE IF EXISTS mc_digits, crash_src;
        CREATE TABLE mc_digits (d int PRIMARY KEY);
        INSERT INTO mc_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
        CREATE TABLE crash_src (id bigint PRIMARY KEY, label char(255) NOT NULL, label2 char(1) NOT NULL, amount decimal(12,2) NOT NULL, note text);
        INSERT INTO crash_src
          SELECT i * 3 + i % 3, CONCAT(MD5(i), MD5(i + 1), MD5(i + 2), MD5(i + 3), MD5(i + 4), MD5(i + 5), MD5(i + 6), LEFT(MD5(i + 7), 31)),
                 RIGHT(MD5(i + 7), 1), (i % 100000) / 100.0, CASE WHEN i % 5 = 0 THEN NULL ELSE REPEAT(CHAR(97 + i % 26), 10 + i % 20) END
          FROM (SELECT a.d * 10000 + b.d * 1000 + c.d * 100 + e.d * 10 + f.d + 1 AS i
                FROM mc_digits a, mc_digits b, mc_digits c, mc_digits e, mc_digits f) AS n
          WHERE i <= 66666 AND i % 10 <> 7;`)
      const [rows] = await admin.query("SELECT id FROM crash_src")
      sourceIds = (rows as Array<{ id: number }>).map((row) => Number(row.id))
    } finally {
      await admin.end()
    }
  }, 120_000)
  afterAll(async () => {
    const admin = await adminConnection()
    await admin.query("DROP TABLE IF EXISTS mc_digits, crash_src").finally(() => admin.end())
    for (const dir of configDirs) fs.rmSync(dir, { recursive: true, force: true })
  })

  // The label is split over two CHAR columns (MySQL's CHAR holds 255 at most) and joined again in the query.
  const query = "SELECT id, CONCAT(label, label2) AS label, amount, note FROM crash_src"
  const chunked = "mode: chunked, chunk_column: id, chunk_size: 20000, chunk_checkpoint: true, format: csv"
  const keyset = "mode: keyset, key_columns: id, page_size: 12000, chunk_checkpoint: true, format: parquet, row_group_size: 2000"
  const cases: ReadonlyArray<readonly [string, KillPoint, string]> = [
    ["chunked CSV", "between", chunked],
    ["chunked CSV", "during", chunked],
    ["keyset Parquet", "during", keyset]
  ]

  it.each(cases)("%s: killed %s, resumed: every row exactly once", async (_label, point, spec) => {
    const config = writeConfig(`source: { type: mysql, url: "${testMysqlUrl()}" }
exports:
  - { name: crash_my, query: "${query}", batch_size: 2000, destination: { type: local, path: out }, ${spec} }
`)
    configDirs.push(path.dirname(config))
    const out = path.join(path.dirname(config), "out")
    await runAndKill({ config, out, exportName: "crash_my", point })

    const resumed = await runCli(["run", "-c", config, "--resume"])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toMatch(/resuming run/)
    const verified = await verifyDestination(out, resumed.stderr, sourceIds)
    expect(verified.problems).toEqual([])
    expect({ missing: verified.missing, duplicated: verified.duplicated }).toEqual({ missing: [], duplicated: [] })
    expect(verified.rowCount).toBe(sourceIds.length)
    expect(verified.untracked).toEqual(verified.unlisted)
  }, 90_000)
})
