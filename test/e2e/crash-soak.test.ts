import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import Database from "better-sqlite3"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { encodeManifest, encodeSuccessMarker, type Manifest } from "../../src/core/manifest.js"
import { runCli } from "../support/cli.js"
import { readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import { checkFinished, createSoakSource, dropSoakSource, runSoak, soakConfig, type SoakSource } from "./soak.js"

// Crash soak: RIVET_SOAK_N trials (default 5) of a checkpointed chunked export SIGKILLed at random moments and
// resumed until it exits 0 (see soak.ts). RIVET_SOAK_SEED replays a schedule; RIVET_SOAK_TALLY=<file> receives the
// tally as JSON (bench/soak.sh prints it).

const TRIALS = Number(process.env["RIVET_SOAK_N"] ?? 5)
const SEED = Number(process.env["RIVET_SOAK_SEED"] ?? Math.floor(Math.random() * 2 ** 31))

let sql: postgres.Sql
let source: SoakSource
const dirs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  source = await createSoakSource(sql)
}, 120_000)

afterAll(async () => {
  await dropSoakSource(sql)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

describe("crash soak (CLI)", () => {
  it(`${TRIALS} trials of random SIGKILLs and --resume lose and duplicate nothing`, async () => {
    const tally = await runSoak({ pgUrl: testPgUrl(), source, trials: TRIALS, seed: SEED, log: console.log })
    const file = process.env["RIVET_SOAK_TALLY"]
    if (file !== undefined) fs.writeFileSync(file, `${JSON.stringify(tally, null, 2)}\n`)

    expect(tally.problems).toEqual([])
    expect({
      rowsLost: tally.rowsLost,
      duplicateRows: tally.duplicateRows,
      tempFilesLeft: tally.tempFilesLeft,
      partialFinals: tally.partialFinals,
      stateMismatches: tally.stateMismatches,
      untrackedMisreported: tally.untrackedMisreported,
      unexpectedExits: tally.unexpectedExits
    }).toEqual({
      rowsLost: 0,
      duplicateRows: 0,
      tempFilesLeft: 0,
      partialFinals: 0,
      stateMismatches: 0,
      untrackedMisreported: 0,
      unexpectedExits: 0
    })
    expect(tally.trials).toBe(TRIALS)
    // A soak whose kills all came too late proves nothing. The first kill of a trial is aimed early in a full run and
    // lands nearly always; how many resumes are killed depends on the drawn schedule, so only the trials are counted.
    expect(tally.trialsKilled, `seed ${SEED}`).toBeGreaterThanOrEqual(Math.ceil(TRIALS / 2))
  }, 30_000 + TRIALS * 40_000)
})

describe("the soak's checks", () => {
  it("count every kind of damage they look for", async () => {
    const clean = soakConfig(testPgUrl(), "csv")
    dirs.push(clean.dir)
    const run = await runCli(["run", "-c", clean.file])
    expect(run.code, run.stderr).toBe(0)
    expect((await checkFinished(clean, run.stderr, source)).problems).toEqual([])

    /** The checks over a damaged copy of the clean destination and state. */
    const damaged = async (damage: (out: string, stateFile: string, manifest: Manifest) => void) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-h3-soak-"))
      dirs.push(dir)
      fs.cpSync(clean.dir, dir, { recursive: true })
      const paths = { out: path.join(dir, "out"), stateFile: path.join(dir, ".rivet_state.db") }
      damage(paths.out, paths.stateFile, readManifest(paths.out))
      return (await checkFinished(paths, run.stderr, source)).counts
    }
    const publish = (out: string, manifest: Manifest) => {
      const bytes = encodeManifest(manifest)
      fs.writeFileSync(path.join(out, "_manifests", `${manifest.run_id}.json`), bytes)
      fs.writeFileSync(path.join(out, "manifest.json"), bytes)
      fs.writeFileSync(path.join(out, "_SUCCESS"), encodeSuccessMarker(bytes))
    }
    const sqlite = (stateFile: string, statement: string) => {
      const db = new Database(stateFile)
      db.exec(statement)
      db.close()
    }
    const first = readManifest(clean.out).parts[0]!

    const lost = await damaged((out, _, manifest) => publish(out, { ...manifest, parts: manifest.parts.slice(1) }))
    expect(lost.rowsLost).toBe(first.rows)
    const duplicated = await damaged((out, _, manifest) => {
      fs.copyFileSync(path.join(out, first.path), path.join(out, `copy_${first.path}`))
      publish(out, { ...manifest, parts: [...manifest.parts, { ...first, path: `copy_${first.path}` }] })
    })
    expect(duplicated.duplicateRows).toBe(first.rows)
    const partial = await damaged((out) => {
      const bytes = fs.readFileSync(path.join(out, first.path))
      fs.writeFileSync(path.join(out, `h3_partial_${first.path}`), bytes.subarray(0, bytes.length >> 1))
    })
    expect(partial).toMatchObject({ partialFinals: 1, untrackedFiles: 1, untrackedMisreported: 1 })
    const wrongMarker = await damaged((out) => fs.writeFileSync(path.join(out, "_SUCCESS"), "sha256:00\n"))
    expect(wrongMarker.partialFinals).toBe(1)
    const notKept = await damaged((out, _, manifest) => fs.rmSync(path.join(out, "_manifests", `${manifest.run_id}.json`)))
    expect(notKept.partialFinals).toBe(1)
    const temp = await damaged((out) => fs.writeFileSync(path.join(out, `.${first.path}.tmp-99999-0123456789ab`), "x"))
    expect(temp.tempFilesLeft).toBe(1)
    const pending = await damaged((_, stateFile) => sqlite(stateFile, "UPDATE rivet_units SET status = 'pending' WHERE idx = 0"))
    expect(pending.stateMismatches).toBe(1)
    const forgotten = await damaged((_, stateFile) => sqlite(stateFile, `DELETE FROM rivet_parts WHERE path = '${first.path}'`))
    expect(forgotten.stateMismatches).toBeGreaterThanOrEqual(1)
    const restarted = await damaged((_, stateFile) =>
      sqlite(stateFile, "INSERT INTO rivet_runs SELECT run_id || 'x', export_name, mode, started_at, NULL, 'interrupted', 0, 0, 0, NULL, 1, NULL, run_identity FROM rivet_runs")
    )
    expect(restarted.stateMismatches).toBe(1)
  }, 60_000)
})
