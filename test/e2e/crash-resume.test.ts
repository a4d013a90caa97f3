import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { type KillPoint, runAndKill, verifyDestination } from "./crash-support.js"

// SIGKILLs `rivet run` at chosen points of a checkpointed chunked or keyset export, then checks that a plain re-run
// refuses to start over, that `--resume` finishes the run, and that the destination holds every row exactly once,
// nothing partial under a final name, no temp file, and only the leftovers the summary reports as untracked.

let sql: postgres.Sql
let sourceIds: Array<number> = []
const configDirs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  // 60k rows, ids with gaps over 4..200002. Wide rows (~300 bytes as CSV, ~150 as Parquet) keep the CPU per byte low
  // while every chunk or page still spans more than one 1 MiB block, so its temp file lives long enough to be seen.
  await sql.unsafe(`
    DROP TABLE IF EXISTS crash_src;
    CREATE TABLE crash_src (id bigint PRIMARY KEY, label text NOT NULL, amount numeric(12,2) NOT NULL, note text);
    INSERT INTO crash_src
      SELECT i * 3 + i % 3, (SELECT string_agg(md5((i * 8 + k)::text), '') FROM generate_series(0, 7) AS k),
             (i % 100000) / 100.0, CASE WHEN i % 5 = 0 THEN NULL ELSE repeat(chr(97 + i % 26), 10 + i % 20) END
      FROM generate_series(1, 66666) AS i WHERE i % 10 <> 7;
  `)
  sourceIds = (await sql<Array<{ id: string }>>`SELECT id FROM crash_src`).map((row) => Number(row.id))
}, 120_000)

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS crash_src")
  await sql.end()
  for (const dir of configDirs) fs.rmSync(dir, { recursive: true, force: true })
})

interface Case {
  readonly label: string
  readonly exportName: string
  /** The export's mode and format keys, YAML flow style. */
  readonly spec: string
}

const chunkedCsv: Case = {
  label: "chunked, parallel: 1, CSV",
  exportName: "crash_chunked",
  spec: "mode: chunked, chunk_size: 20000, parallel: 1, chunk_checkpoint: true, format: csv"
}
const chunkedParallel: Case = {
  label: "chunked, parallel: 2, Parquet",
  exportName: "crash_chunked_p2",
  spec: "mode: chunked, chunk_size: 40000, parallel: 2, chunk_checkpoint: true, format: parquet, row_group_size: 2000"
}
const keyset: Case = {
  label: "keyset, Parquet",
  exportName: "crash_keyset",
  spec: "mode: keyset, page_size: 12000, chunk_checkpoint: true, format: parquet, row_group_size: 2000"
}

const configFor = (c: Case): string => {
  const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: ${c.exportName}, table: crash_src, batch_size: 2000, destination: { type: local, path: out }, ${c.spec} }
`)
  configDirs.push(path.dirname(file))
  return file
}

const casesOf = (c: Case, points: ReadonlyArray<KillPoint>) => points.map((point) => [c.label, point, c] as const)
const cases = [
  ...casesOf(chunkedCsv, ["early", "between", "during", "unrecorded"]),
  ...casesOf(chunkedParallel, ["during"]),
  ...casesOf(keyset, ["early", "between", "during", "unrecorded"])
]

describe("SIGKILL mid-run, then --resume (CLI)", () => {
  it.each(cases)("%s: killed %s", async (_label, point, c) => {
    const config = configFor(c)
    const out = path.join(path.dirname(config), "out")

    const killed = await runAndKill({ config, out, exportName: c.exportName, point })
    if (point === "early") expect(killed.afterKill.finals).toEqual([])
    // A killed writer cannot clean up: its temp file stays until the next run sweeps it.
    if (point === "during") expect(killed.afterKill.temps.length).toBeGreaterThan(0)

    const plain = await runCli(["run", "-c", config])
    expect(plain.code, plain.stderr).not.toBe(0)
    expect(plain.stderr).toMatch(/checkpointed run '\S+' did not finish/)
    expect(plain.stderr).toContain("--resume")

    const resumed = await runCli(["run", "-c", config, "--resume"])
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toMatch(/resuming run/)

    const verified = await verifyDestination(out, resumed.stderr, sourceIds)
    expect(verified.problems).toEqual([])
    expect({ missing: verified.missing, duplicated: verified.duplicated }).toEqual({ missing: [], duplicated: [] })
    expect(verified.rowCount).toBe(sourceIds.length)
    // Exactly the files no manifest lists are reported, by name.
    expect(verified.untracked).toEqual(verified.unlisted)
    // Work committed before the kill is kept, not redone (a redone chunk would have a new name).
    if (point !== "early") {
      expect(killed.committed).not.toEqual([])
      expect(killed.committed.filter((file) => !verified.listed.includes(file))).toEqual([])
    }

    if (point === "unrecorded") {
      expect(killed.unrecordedPart).toBeDefined()
      if (c === keyset) {
        // A page's part is named after the run and the page: the re-read page replaced it.
        expect(verified.listed).toContain(killed.unrecordedPart)
        expect(verified.unlisted).toEqual([])
      } else {
        // A redone chunk gets a fresh name: the orphan stays, complete, and is reported.
        expect(verified.untracked).toContain(killed.unrecordedPart)
      }
    }
  }, 90_000)
})
