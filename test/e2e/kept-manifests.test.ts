import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { DeleteObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import type { Manifest } from "../../src/core/manifest.js"
import { runCli, writeConfig } from "../support/cli.js"
import { filesUnder, readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import type { S3TestServer } from "../support/s3/server.js"
import { configFile, expectCommitted, isolateAwsEnv, runLogged, s3Destination, serverEnv, startWithBucket, testS3Client } from "./s3-support.js"

// Every run keeps its manifest under _manifests/{run_id}.json: an incremental destination with many runs validates
// clean (each earlier run's parts are listed by its kept manifest), a part deleted from an old run is found, and a
// run killed between its kept manifest and manifest.json is reported as not published — local and S3.

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const HOLD_PRELOAD = pathToFileURL(path.resolve(import.meta.dirname, "../fixtures/hold-rename-preload.mjs")).href
const BUCKET = "rivet-e2e-kept"

let sql: postgres.Sql
const dirs: Array<string> = []
/** Each export reads its own table (named after it), so every first run finds only its own rows. */
const tables = new Map<string, number>()

/** Adds `count` rows to the export's table, with ids after the last ones. */
const addRows = async (name: string, count: number) => {
  const table = `${name}_src`
  if (!tables.has(table)) {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id int PRIMARY KEY, note text NOT NULL)`)
    tables.set(table, 1)
  }
  const from = tables.get(table)!
  tables.set(table, from + count)
  await sql.unsafe(`INSERT INTO ${table} SELECT i, 'n' || i FROM generate_series(${from}, ${from + count - 1}) AS i`)
}

beforeAll(() => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
})

afterAll(async () => {
  for (const table of tables.keys()) await sql.unsafe(`DROP TABLE IF EXISTS ${table}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** An incremental export of its table (rows after the stored id) to `out` beside the config. */
const incremental = (name: string) => {
  const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: ${name}, table: ${name}_src, mode: incremental, cursor_column: id, format: csv, destination: { type: local, path: out } }
`)
  dirs.push(path.dirname(file))
  return { config: file, out: path.join(path.dirname(file), "out") }
}

const run = async (config: string) => {
  const result = await runCli(["run", "-c", config])
  expect(result.stderr).not.toContain("Error:")
  expect(result.code).toBe(0)
}

const findingLines = (stdout: string) => stdout.split("\n").filter((line) => /^(FAIL|WARN) /.test(line))
const keptManifest = (out: string, runId: string): Manifest =>
  JSON.parse(fs.readFileSync(path.join(out, "_manifests", `${runId}.json`), "utf8")) as Manifest
const keptRunIds = (out: string) =>
  fs.readdirSync(path.join(out, "_manifests")).map((name) => name.replace(/\.json$/, "")).sort()

describe("kept run manifests (local)", () => {
  it("three incremental runs validate clean; --run checks one; a part deleted from the oldest run is found", async () => {
    const { config, out } = incremental("kept3")
    for (const rows of [100, 20, 30]) {
      await addRows("kept3", rows)
      await run(config)
    }
    const runIds = keptRunIds(out)
    expect(runIds).toHaveLength(3)
    // manifest.json is the latest run's kept manifest, byte for byte.
    const latest = readManifest(out)
    expect(latest.run_id).toBe(runIds[2])
    expect(fs.readFileSync(path.join(out, "_manifests", `${latest.run_id}.json`))).toEqual(fs.readFileSync(path.join(out, "manifest.json")))
    const runs = runIds.map((runId) => keptManifest(out, runId))
    expect(runs.map((manifest) => manifest.row_count)).toEqual([100, 20, 30])
    expect(filesUnder(out).filter((file) => file.endsWith(".csv"))).toEqual(runs.flatMap((manifest) => manifest.parts.map((part) => part.path)).sort())

    const clean = await runCli(["validate", "-c", config, "--strict"])
    expect(clean.stderr).toBe("")
    expect(clean.code).toBe(0)
    expect(findingLines(clean.stdout)).toEqual([])
    expect(clean.stdout).toContain("OK   kept3: 3 runs, 3 parts, 150 rows verified\n")

    const one = await runCli(["validate", "-c", config, "--run", runIds[1]!, "--json"])
    expect(one.code).toBe(0)
    const report = JSON.parse(one.stdout) as { exports: Array<{ export: string; runs: number; parts: number; rows: number; findings: Array<unknown> }> }
    expect(report.exports).toEqual([expect.objectContaining({ export: "kept3", runs: 1, parts: 1, rows: 20, findings: [] })])

    const oldPart = runs[0]!.parts[0]!.path
    fs.rmSync(path.join(out, oldPart))
    const damaged = await runCli(["validate", "-c", config])
    expect(damaged.code).toBe(3)
    expect(findingLines(damaged.stdout)).toEqual([`FAIL kept3: PART_MISSING ${oldPart}: listed in the manifest but not at the destination`])
    // Only the latest run's parts re-read: the loss in the oldest run is not seen, nor reported as anything else.
    const latestOnly = await runCli(["validate", "-c", config, "--run", runIds[2]!])
    expect(latestOnly.code).toBe(0)
    expect(findingLines(latestOnly.stdout)).toEqual([])

    const unknown = await runCli(["validate", "-c", config, "--run", "other_20250101T000000.000"])
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("Error: --run: 'other_20250101T000000.000' is not a run of any export in ")
  }, 120_000)

  it("ten incremental runs validate with no warning, even with --strict", async () => {
    const { config, out } = incremental("kept10")
    for (let index = 0; index < 10; index++) {
      await addRows("kept10", 10 + index)
      const [outcome] = await Effect.runPromise(runExportsEffect(config))
      expect(outcome?._tag).toBe("success")
    }
    expect(keptRunIds(out)).toHaveLength(10)
    const result = await runCli(["validate", "-c", config, "--strict"])
    expect(result.code).toBe(0)
    expect(findingLines(result.stdout)).toEqual([])
    expect(result.stdout).toContain("OK   kept10: 10 runs, 10 parts, 145 rows verified\n")
    expect(result.stdout).toContain("1 export validated: 1 ok, 0 failed (0 failures, 0 warnings)")
  }, 120_000)

  it("a run killed between its kept manifest and manifest.json: reported as not published until a later run publishes", async () => {
    const { config, out } = incremental("keptcrash")
    await addRows("keptcrash", 50)
    await run(config)
    const published = readManifest(out)
    await addRows("keptcrash", 5)
    const child: ChildProcess = spawn(process.execPath, [BIN, "run", "-c", config], {
      env: { ...process.env, NODE_OPTIONS: `--import=${HOLD_PRELOAD}`, RIVET_TEST_HOLD_MS: "30000", RIVET_TEST_HOLD_NAME: "manifest.json" },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const exited = new Promise((resolve) => child.on("close", resolve))
    const until = Date.now() + 30_000
    while (!stderr.includes("hold-rename-preload: holding manifest.json before")) {
      if (Date.now() > until || child.exitCode !== null) throw new Error(`the run never reached manifest.json:\n${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    child.kill("SIGKILL")
    await exited

    const crashed = keptRunIds(out).find((runId) => runId !== published.run_id)!
    expect(keptRunIds(out)).toEqual([published.run_id, crashed])
    expect(readManifest(out).run_id).toBe(published.run_id) // the crash left the published run in place
    const afterCrash = await runCli(["validate", "-c", config])
    expect(afterCrash.code).toBe(0)
    expect(findingLines(afterCrash.stdout)).toEqual([
      `WARN keptcrash: RUN_NOT_PUBLISHED _manifests/${crashed}.json: run '${crashed}' started after the run in manifest.json but did not publish: it stopped between writing this kept manifest and manifest.json (a crash, or another run's manifest found there), or is publishing right now; its parts are complete, but no _SUCCESS vouched for them and the export's next run reads its rows again`
    ])
    expect(afterCrash.stdout).toContain("OK   keptcrash: 2 runs, 2 parts, 55 rows verified (1 warning)")

    // The next run reads the crashed run's rows again (at-least-once) and publishes: nothing is left to report.
    await run(config)
    expect(readManifest(out).row_count).toBe(5)
    const after = await runCli(["validate", "-c", config, "--strict"])
    expect(after.code).toBe(0)
    expect(findingLines(after.stdout)).toEqual([])
    expect(after.stdout).toContain("OK   keptcrash: 3 runs, 3 parts, 60 rows verified\n")
  }, 120_000)
})

describe("kept run manifests (S3)", () => {
  let server: S3TestServer
  let env: Record<string, string>
  let s3: S3Client

  beforeAll(async () => {
    isolateAwsEnv()
    process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] = "true"
    server = await startWithBucket(BUCKET)
    env = serverEnv(server)
    s3 = testS3Client(server)
  })
  afterAll(async () => {
    s3?.destroy()
    await server?.stop()
  })

  it("three incremental runs under one prefix validate clean; a part deleted from the oldest run is found", async () => {
    const prefix = "history/"
    const config = configFile([
      {
        name: "kepts3",
        table: "kepts3_src",
        mode: "incremental",
        cursor_column: "id",
        format: "ndjson",
        destination: s3Destination(server, BUCKET, { prefix })
      }
    ])
    dirs.push(path.dirname(config))
    const runIds: Array<string> = []
    for (const rows of [40, 4, 6]) {
      await addRows("kepts3", rows)
      const result = await runLogged(server, ["run", "-c", config, "--validate"], env)
      expect(result.stderr).not.toContain("Error:")
      expect(result.code).toBe(0)
      runIds.push((await expectCommitted(server, BUCKET, prefix)).run_id)
    }
    const keys = (await server.listObjects(BUCKET, `${prefix}_manifests/`)).map((object) => object.key).sort()
    expect(keys).toEqual(runIds.map((runId) => `${prefix}_manifests/${runId}.json`))

    const clean = await runLogged(server, ["validate", "-c", config, "--strict"], env)
    expect(clean.code).toBe(0)
    expect(findingLines(clean.stdout)).toEqual([])
    // Every run's row count is the rows that run found: no run lists another's rows.
    expect(clean.stdout).toContain(`OK   kepts3: 3 runs, 3 parts, 50 rows verified\n`)

    const oldest = JSON.parse(new TextDecoder().decode(await server.getObject(BUCKET, keys[0]!))) as Manifest
    const oldPart = oldest.parts[0]!.path
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: `${prefix}${oldPart}` }))
    const damaged = await runLogged(server, ["validate", "-c", config], env)
    expect(damaged.code).toBe(3)
    expect(findingLines(damaged.stdout)).toEqual([`FAIL kepts3: PART_MISSING ${oldPart}: listed in the manifest but not at the destination`])
    expect(damaged.requests.filter((request) => !["ListObjectsV2", "GetObject"].includes(request.operation))).toEqual([])
  }, 120_000)
})
