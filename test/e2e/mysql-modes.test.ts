import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminConnection, noMysql } from "../support/mysql.js"
import { multiset, ndjsonRows, readManifest } from "../support/output.js"
import { partsText, removeTempDirs, runMysql, succeeded, tempDir } from "../plugins/sources/mysql/run.js"

// Rows from cross joins of digits (portable to MySQL 8, which has no seq_1_to_n tables).
const SETUP = `
DROP TABLE IF EXISTS mm_digits, mm_inc, mm_chunk, mm_keyset, mm_window, mm_ubig;
CREATE TABLE mm_ubig (id bigint unsigned PRIMARY KEY);
INSERT INTO mm_ubig VALUES (18446744073709551615), (18446744073709551614), (18446744073709000000);
CREATE TABLE mm_digits (d int PRIMARY KEY);
INSERT INTO mm_digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
CREATE TABLE mm_inc (id int PRIMARY KEY, updated_at timestamp(6) NOT NULL, note varchar(20));
INSERT INTO mm_inc SELECT a.d * 10 + b.d + 1, TIMESTAMP'2026-01-01 00:00:00.000123' + INTERVAL (a.d * 10 + b.d + 1) SECOND, 'n'
  FROM mm_digits a, mm_digits b;
CREATE TABLE mm_chunk (rid int PRIMARY KEY, k bigint, payload varchar(10), KEY (k));
INSERT INTO mm_chunk
  SELECT i, CASE WHEN i % 997 = 0 THEN NULL ELSE i * 3 END, 'p' FROM (
    SELECT a.d * 10000 + b.d * 1000 + c.d * 100 + e.d * 10 + f.d + 1 AS i
    FROM mm_digits a, mm_digits b, mm_digits c, mm_digits e, mm_digits f
  ) AS n WHERE i % 10 <> 7;
CREATE TABLE mm_keyset (tenant varchar(10) NOT NULL, seq int NOT NULL, v varchar(10), PRIMARY KEY (tenant, seq));
INSERT INTO mm_keyset SELECT CONCAT('t', i % 7), i, CONCAT('v', i) FROM (
  SELECT a.d * 1000 + b.d * 100 + c.d * 10 + e.d + 1 AS i FROM mm_digits a, mm_digits b, mm_digits c, mm_digits e
) AS n WHERE i <= 5000;
CREATE TABLE mm_window (id int PRIMARY KEY, at datetime(6) NOT NULL, day date NOT NULL);
SET SESSION time_zone = '+00:00';
INSERT INTO mm_window VALUES
  (1, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, UTC_DATE()), (2, UTC_TIMESTAMP(6) - INTERVAL 3 DAY, UTC_DATE() - INTERVAL 3 DAY),
  (3, UTC_TIMESTAMP(6) - INTERVAL 10 DAY, UTC_DATE() - INTERVAL 10 DAY), (4, UTC_TIMESTAMP(6) + INTERVAL 1 DAY, UTC_DATE() + INTERVAL 1 DAY);
`

describe.skipIf(noMysql())("mysql source: the modes beyond full", () => {
  beforeAll(async () => {
    const admin = await adminConnection()
    await admin.query(SETUP).finally(() => admin.end())
  }, 120_000)
  afterAll(async () => {
    const admin = await adminConnection()
    await admin.query("DROP TABLE IF EXISTS mm_digits, mm_inc, mm_chunk, mm_keyset, mm_window, mm_ubig").finally(() => admin.end())
    removeTempDirs()
  })

  it("incremental: everything first, then exactly the rows inserted between runs, then none", async () => {
    const dir = tempDir()
    const spec = { name: "inc", table: "mm_inc", mode: "incremental", cursor_column: "updated_at" }
    const first = succeeded((await runMysql(dir, [spec]))[0])
    expect(first.rows).toBe(100)
    expect(first.manifest?.source.cursor?.value).toBe("2026-01-01T00:01:40.000123Z")

    const admin = await adminConnection()
    try {
      await admin.query(`SET SESSION time_zone = '+00:00';
        INSERT INTO mm_inc SELECT 1000 + d, TIMESTAMP'2026-02-01 00:00:00' + INTERVAL d SECOND, 'late' FROM mm_digits`)
    } finally {
      await admin.end()
    }
    const second = succeeded((await runMysql(dir, [spec]))[0])
    expect(second.rows).toBe(10)
    expect(ndjsonRows(path.join(dir, "out/inc")).map((row) => row["id"])).toEqual(Array.from({ length: 10 }, (_, i) => 1000 + i))
    expect(succeeded((await runMysql(dir, [spec]))[0]).rows).toBe(0)
  })

  it("chunked parallel: 2 over 90 000 rows with key gaps and NULL keys exports every row exactly once", async () => {
    const dir = tempDir()
    const spec = { name: "chunk", table: "mm_chunk", mode: "chunked", chunk_column: "k", chunk_size: 25_000, parallel: 2, format: "csv", batch_size: 2_000 }
    const result = succeeded((await runMysql(dir, [spec]))[0])
    const admin = await adminConnection()
    const [source] = await admin.query("SELECT rid FROM mm_chunk").finally(() => admin.end())
    const ids = (source as Array<{ rid: number }>).map((row) => row.rid)
    expect(ids.length).toBe(90_000)
    expect(result.rows).toBe(ids.length)
    const exported = partsText(path.join(dir, "out/chunk"))
      .split("\n")
      .filter((line) => line.length > 0 && line !== "rid,k,payload")
      .map((line) => Number(line.split(",")[0]))
    expect(multiset(exported)).toEqual(multiset(ids))
    // 300k key span / 25k = 12 range chunks + 1 NULL chunk.
    expect(result.parts).toHaveLength(13)
    for (const part of result.parts) expect(part.path).toMatch(/^chunk_\d{8}_\d{6}_chunk\d+_[0-9a-f]{16}\.csv$/)
  }, 180_000)

  it("chunked: splits a bigint unsigned key (decimal(20,0)) up to 2^64 - 1", async () => {
    const dir = tempDir()
    const result = succeeded((await runMysql(dir, [{ name: "ub", table: "mm_ubig", mode: "chunked", chunk_size: 100_000 }]))[0])
    expect(result.rows).toBe(3)
    expect(ndjsonRows(path.join(dir, "out/ub")).map((row) => row["id"]).sort()).toEqual([
      "18446744073709000000", "18446744073709551614", "18446744073709551615"
    ])
  })

  it("keyset: pages a composite primary key, every row once and in key order", async () => {
    const dir = tempDir()
    const result = succeeded((await runMysql(dir, [{ name: "ks", table: "mm_keyset", mode: "keyset", page_size: 1000 }]))[0])
    expect(result.rows).toBe(5000)
    expect(result.parts).toHaveLength(5)
    const rows = ndjsonRows(path.join(dir, "out/ks"))
    expect(multiset(rows.map((row) => row["seq"]))).toEqual(multiset(Array.from({ length: 5000 }, (_, i) => i + 1)))
    const keys = rows.map((row) => [row["tenant"] as string, row["seq"] as number] as const)
    expect(keys).toEqual([...keys].sort(([t1, s1], [t2, s2]) => (t1 < t2 ? -1 : t1 > t2 ? 1 : s1 - s2)))
  })

  it.each([["at"], ["day"]])("time_window: rows from UTC midnight N days ago until now (%s)", async (column) => {
    const dir = tempDir()
    const result = succeeded((await runMysql(dir, [{ name: "w", table: "mm_window", mode: "time_window", time_column: column, days_window: 5 }]))[0])
    expect(ndjsonRows(path.join(dir, "out/w")).map((row) => row["id"]).sort()).toEqual([1, 2])
    expect(readManifest(path.join(dir, "out/w")).source.mode).toBe("time_window")
    expect(result.manifest?.source.mode).toBe("time_window")
  })
})
