import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parquetReadObjects } from "hyparquet"
import { compressors } from "hyparquet-compressors"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Manifest } from "../../src/core/manifest.js"
import { DEMO_ROW_COUNTS } from "../../src/embedded-postgres/demo-seed.js"
import { runCli, writeConfig } from "../support/cli.js"
import { filesUnder, multiset, readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"

// Chunked exports with `parallel: 2` through the built CLI, where chunks run in this thread and a worker thread
// (src/engine/lanes). Under vitest the sources have no built worker entry, so only the CLI exercises the lanes.
// RIVET_LANES=1 asks for the worker thread whatever the cores (unset, two cores run both lanes in this thread).

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const ROWS = 300_000
const WITH_WORKER = { RIVET_LANES: "1" }
const LANES_NOTICE = /chunks ran in 1 worker thread \((\d+)\) and in this thread \((\d+)\)/

let sql: postgres.Sql
const dirs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  // Ids with gaps: 2, 6, 8, 12, 14, … 900000.
  await sql.unsafe(`
    DROP TABLE IF EXISTS lanes_src, lanes_flaky;
    CREATE TABLE lanes_src (id bigint PRIMARY KEY, label text NOT NULL, amount numeric(12,2), at timestamptz);
    INSERT INTO lanes_src
      SELECT i * 3 - i % 2, md5(i::text), (i % 100000) / 100.0, timestamptz '2026-01-01 00:00:00.000123+00' + i * interval '1 second'
      FROM generate_series(1, ${ROWS}) AS i;
    CREATE TABLE lanes_flaky (id int PRIMARY KEY, broken boolean NOT NULL DEFAULT false);
    INSERT INTO lanes_flaky SELECT i, false FROM generate_series(1, 40000) AS i;
  `)
}, 180_000)

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS lanes_src, lanes_flaky")
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const configFile = (yaml: string) => {
  const file = writeConfig(yaml)
  dirs.push(path.dirname(file))
  return file
}

const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`

/**
 * The destination holds exactly the manifest's parts (sizes and fingerprints as listed), the manifest, its kept
 * copy, _SUCCESS and the `untracked` leftovers of an interrupted attempt.
 */
const expectExactDestination = (out: string, untracked: ReadonlyArray<string> = []): Manifest => {
  const manifest = readManifest(out)
  const manifestBytes = fs.readFileSync(path.join(out, "manifest.json"))
  const kept = `_manifests/${manifest.run_id}.json`
  expect(fs.readFileSync(path.join(out, "_SUCCESS"), "utf8")).toBe(`${sha256(manifestBytes)}\n`)
  expect(fs.readFileSync(path.join(out, kept))).toEqual(manifestBytes)
  expect(filesUnder(out)).toEqual(
    [...manifest.parts.map((part) => part.path), ...untracked, "_SUCCESS", kept, "manifest.json"].sort()
  )
  for (const part of manifest.parts) {
    const bytes = fs.readFileSync(path.join(out, part.path))
    expect(bytes.length, part.path).toBe(part.size_bytes)
    expect(sha256(bytes), part.path).toBe(part.content_fingerprint)
  }
  expect(manifest.part_count).toBe(manifest.parts.length)
  expect(manifest.row_count).toBe(manifest.parts.reduce((sum, part) => sum + part.rows, 0))
  return manifest
}

const parquetIds = async (out: string, manifest: Manifest): Promise<Array<string>> => {
  const ids: Array<string> = []
  for (const part of manifest.parts) {
    const bytes = fs.readFileSync(path.join(out, part.path))
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
    const rows = await parquetReadObjects({ file, columns: ["id"], compressors })
    expect(rows.length, part.path).toBe(part.rows)
    for (const row of rows) ids.push(String(row["id"]))
  }
  return ids
}

const tempFiles = (out: string) => filesUnder(out).filter((file) => /\.tmp-\d+-[0-9a-f]{12}$/.test(file))

/**
 * Runs one export (its YAML flow mapping without the destination's closing) with a worker thread into `out`, and
 * checks that the run succeeded and that the lanes' notice counts `chunks` chunks.
 */
const exportInLanes = async (exportKeys: string, chunks: number) => {
  const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - ${exportKeys}, destination: { type: local, path: out } }
`)
  const result = await runCli(["run", "-c", config], { env: WITH_WORKER })
  expect(result.code, result.stderr).toBe(0)
  expect(result.stderr).toMatch(LANES_NOTICE)
  expect(result.stderr).not.toMatch(/could not start/)
  const [, inWorker = "0", inThread = "0"] = LANES_NOTICE.exec(result.stderr) ?? []
  expect(Number(inWorker) + Number(inThread)).toBe(chunks)
  return { out: path.join(path.dirname(config), "out"), inWorker: Number(inWorker) }
}

describe("chunked parallel: 2 in worker threads (CLI)", () => {
  it("chunks all done before the worker is ready: no 'could not start' notice, the summary says what happened", async () => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: quick, query: "select i as id from generate_series(1, 30) as i", mode: chunked, chunk_column: id, chunk_size: 10, parallel: 2, format: csv, destination: { type: local, path: out } }
`)
    const result = await runCli(["run", "-c", config], { env: WITH_WORKER })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).not.toMatch(/could not start|stopped: it exited/)
    // Three 10-row chunks take milliseconds here; a worker thread needs far longer to load the CLI and connect.
    expect(result.stderr).toMatch(/chunks ran in this thread \(3\): they were done before a worker thread was ready|chunks ran in 1 worker thread \(\d\) and in this thread \(\d\)/)
    expect(readManifest(path.join(path.dirname(config), "out")).row_count).toBe(30)
  })

  it("exports every row once into parts named as in one thread, with an exact manifest", async () => {
    const chunks = 9 // ids 2..900000 in ranges of 100000
    const { out, inWorker } = await exportInLanes("{ name: lanes, table: lanes_src, mode: chunked, chunk_size: 100000, parallel: 2, format: parquet", chunks)
    expect(inWorker).toBeGreaterThan(0)

    const manifest = expectExactDestination(out)
    expect(manifest.row_count).toBe(ROWS)
    expect(manifest.parts).toHaveLength(chunks)
    manifest.parts.forEach((part, index) =>
      expect(part.path).toMatch(new RegExp(`^lanes_\\d{8}_\\d{6}_chunk${index}_[0-9a-f]{16}\\.parquet$`))
    )
    const expected = (await sql<Array<{ id: string }>>`SELECT id FROM lanes_src`).map((row) => row.id)
    expect(multiset(await parquetIds(out, manifest))).toEqual(multiset(expected))
  }, 300_000)

  it("parallel: 3 with RIVET_LANES=1: one worker thread, and two lanes in this thread; every row once", async () => {
    const { out } = await exportInLanes("{ name: three, table: lanes_src, mode: chunked, chunk_size: 50000, parallel: 3, format: csv", 18)
    const manifest = expectExactDestination(out)
    expect(manifest.row_count).toBe(ROWS)
    expect(manifest.parts).toHaveLength(18)
  }, 300_000)

  // Unset (empty), the cores decide: on two, both lanes stay in this thread; with more, a worker thread joins.
  const manyCores = os.availableParallelism() > 2
  it.each([
    ["RIVET_LANES=0: every chunk in this thread", "0", false],
    [`RIVET_LANES unset on ${os.availableParallelism()} cores: ${manyCores ? "a worker thread" : "every chunk in this thread"}`, "", manyCores]
  ] as const)("%s", async (_label, lanes, workers) => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: one_thread, query: "SELECT * FROM lanes_src WHERE id <= 60000", chunk_column: id, mode: chunked, chunk_size: 10000, parallel: 2, format: csv, destination: { type: local, path: out } }
`)
    const result = await runCli(["run", "-c", config], { env: { RIVET_LANES: lanes } })
    expect(result.code, result.stderr).toBe(0)
    if (workers) expect(result.stderr).toMatch(/chunks ran in/)
    else expect(result.stderr).not.toMatch(/worker thread|chunks ran in/)
    expect(expectExactDestination(path.join(path.dirname(config), "out")).row_count).toBe(20_000)
  }, 120_000)

  // Chunk 0 (~80 MB of CSV) keeps this thread busy while the worker, once ready, runs the small chunks 1, 2, 3;
  // chunk 3 fails.
  it("a chunk failing in the worker fails the run with its tagged error; --resume finishes it", async () => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: flaky
    query: "SELECT id, 1 / (CASE WHEN broken THEN 0 ELSE 1 END) AS ok, repeat('x', CASE WHEN id <= 5000 THEN 16000 ELSE 10 END) AS pad FROM lanes_flaky"
    chunk_column: id
    mode: chunked
    chunk_size: 5000
    parallel: 2
    chunk_checkpoint: true
    batch_size: 500
    format: csv
    destination: { type: local, path: out }
`)
    const out = path.join(path.dirname(config), "out")
    await sql.unsafe("UPDATE lanes_flaky SET broken = (id = 17500)")
    try {
      const failed = await runCli(["run", "-c", config], { env: WITH_WORKER })
      expect(failed.code, failed.stderr).toBe(1)
      expect(failed.stderr).toMatch(/Error: .*chunk 3 \(id 15001\.\.20000\): .*division by zero/)
      expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(false)
      // The other lane stops within the platform's 5 s and removes its temp file; on a machine loaded by parallel test
      // files it may be terminated instead, as the run then says, and the next run removes what it left (below).
      const terminated = /did not stop within/.test(failed.stderr)
      if (!terminated) expect(tempFiles(out)).toEqual([])
      const committed = filesUnder(out)
      // Chunk 3 starts once two of chunks 0-2 are done, so at least one of chunks 1 and 2 is committed; the other may
      // still be writing when chunk 3 fails (how soon chunk 0's 80 MB finish decides which lane takes chunk 2).
      expect(committed.filter((file) => /_chunk[12]_/.test(file)).length).toBeGreaterThanOrEqual(1)

      await sql.unsafe("UPDATE lanes_flaky SET broken = false")
      const resumed = await runCli(["run", "-c", config, "--resume"], { env: WITH_WORKER })
      expect(resumed.code, resumed.stderr).toBe(0)
      expect(resumed.stderr).toMatch(/resuming run/)
      // A chunk of this thread interrupted between its part's rename and its checkpoint is redone under a new name;
      // the earlier file stays, complete, and the summary names it.
      const listed = readManifest(out).parts.map((part) => part.path)
      const untracked = committed.filter((file) => !listed.includes(file))
      for (const file of untracked) expect(resumed.stderr).toContain(file)
      expect(untracked.length).toBeLessThan(committed.length)
      const manifest = expectExactDestination(out, untracked)
      expect(tempFiles(out)).toEqual([])
      expect(manifest.row_count).toBe(40_000)
      const ids = manifest.parts.flatMap((part) =>
        fs.readFileSync(path.join(out, part.path), "utf8").trim().split("\n").slice(1).map((line) => line.split(",")[0])
      )
      expect(multiset(ids)).toEqual(multiset(Array.from({ length: 40_000 }, (_, i) => String(i + 1))))
    } finally {
      await sql.unsafe("UPDATE lanes_flaky SET broken = false")
    }
  }, 300_000)

  // Chunk 0 (~60 MB) fails at its last row in this thread while the worker writes chunk 1 (~100 MB; by then megabytes
  // are in its temp file): the worker is told to abort, and answers once its temp file is removed. (Terminating the
  // worker instead leaves that temp file: this test fails.)
  it("a failure elsewhere aborts the worker's chunk: nothing half-written stays, no _SUCCESS", async () => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: aborted
    query: "SELECT id, 1 / (CASE WHEN broken THEN 0 ELSE 1 END) AS ok, repeat('y', CASE WHEN id <= 10000 THEN 6000 WHEN id <= 20000 THEN 10000 ELSE 10 END) AS pad FROM lanes_flaky"
    chunk_column: id
    mode: chunked
    chunk_size: 10000
    parallel: 2
    batch_size: 200
    format: csv
    destination: { type: local, path: out }
`)
    const out = path.join(path.dirname(config), "out")
    await sql.unsafe("UPDATE lanes_flaky SET broken = (id = 10000)")
    try {
      const started = Date.now()
      const failed = await runCli(["run", "-c", config], { env: WITH_WORKER })
      expect(failed.code, failed.stderr).toBe(1)
      expect(failed.stderr).toMatch(/chunk 0 \(id 1\.\.10000\): .*division by zero/)
      expect(failed.stderr).not.toMatch(/did not stop within/)
      expect(Date.now() - started).toBeLessThan(60_000)
      expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(false)
      expect(tempFiles(out)).toEqual([])
      // Without chunk_checkpoint nothing is recorded; any part that did commit is complete (listed by no manifest).
      expect(fs.existsSync(path.join(out, "manifest.json"))).toBe(false)
    } finally {
      await sql.unsafe("UPDATE lanes_flaky SET broken = false")
    }
  }, 300_000)

  it("SIGINT while this thread and the worker both write: exit 130, both temp files removed, no _SUCCESS", async () => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: interrupted, query: "SELECT id, repeat('z', 10000) AS pad FROM lanes_flaky", chunk_column: id, mode: chunked, chunk_size: 10000, parallel: 2, batch_size: 200, format: csv, destination: { type: local, path: out } }
`)
    const out = path.join(path.dirname(config), "out")
    const child = spawn(process.execPath, [BIN, "run", "-c", config], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ...WITH_WORKER }
    })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
    // Both lanes have a temp file once two chunks are being written.
    const deadline = Date.now() + 120_000
    while (tempFiles(out).length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(tempFiles(out)).toHaveLength(2)
    child.kill("SIGINT")
    expect(await exited, stderr).toBe(130)
    expect(stderr).not.toMatch(/did not stop within/)
    expect(tempFiles(out)).toEqual([])
    expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(false)
  }, 300_000)

  // The worker reads the config file again when it starts; edited since, it refuses with a ConfigError, which crosses
  // the thread boundary as that tagged error (its message, its config path). Planning sleeps 3 s on row 1 and so does
  // chunk 0: the file is edited long before the worker, which loads after planning, reads it.
  it("a worker that cannot start reports its own tagged error in a notice; this thread runs every chunk", async () => {
    const yaml = (destination: string) => `source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: edited, query: "SELECT i AS id FROM generate_series(1, 40) AS i WHERE i <> 1 OR (pg_sleep(3) IS NULL) IS NOT NULL", mode: chunked, chunk_column: id, chunk_size: 10, parallel: 2, format: csv, destination: { type: local, path: ${destination} } }
`
    const config = configFile(yaml("out"))
    const child = spawn(process.execPath, [BIN, "run", "-c", config], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, ...WITH_WORKER }
    })
    let stderr = ""
    let edited = false
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
      if (!edited && stderr.includes("export 'edited' started")) {
        edited = true
        fs.writeFileSync(config, yaml("elsewhere"))
      }
    })
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
    expect(code, stderr).toBe(0)
    expect(stderr).toMatch(
      /a chunk worker thread could not start, so its chunks run in this thread: .*the config file changed while export 'edited' ran: the destination is now /
    )
    expect(stderr).toMatch(/chunks ran in this thread \(\d+\)/)
    expect(expectExactDestination(path.join(path.dirname(config), "out")).row_count).toBe(40)
  }, 120_000)

  it("the embedded demo source: the worker shares the server this process started, which stops with the run", async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-lanes-embedded-"))
    dirs.push(root)
    fs.chmodSync(root, 0o755) // as root, the embedded server runs as the postgres user, who must reach it
    const config = path.join(root, "rivet.yaml")
    fs.writeFileSync(
      config,
      `source: { type: postgres, embedded: { data_dir: demo } }
exports:
  - { name: items, table: order_items, mode: chunked, chunk_column: order_id, chunk_size: 200, batch_size: 100, parallel: 2, format: parquet, destination: { type: local, path: out } }
`
    )
    const result = await runCli(["run", "-c", config], { env: WITH_WORKER })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).not.toMatch(/could not start/)
    const [, inWorker = "0"] = LANES_NOTICE.exec(result.stderr) ?? []
    expect(Number(inWorker)).toBeGreaterThan(0)
    expect(expectExactDestination(path.join(root, "out")).row_count).toBe(DEMO_ROW_COUNTS.order_items)
    const dataDir = path.join(root, "demo")
    expect(fs.readdirSync(dataDir)).not.toContain("server-owner.json")
    const cluster = fs.readdirSync(dataDir).find((name) => /^pg\d+$/.test(name))!
    expect(fs.existsSync(path.join(dataDir, cluster, "postmaster.pid"))).toBe(false)
  }, 300_000)
})
