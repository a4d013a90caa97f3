import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import type { CliResult } from "../support/cli.js"
import { filesUnder, readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import { denyWrites, skipBecause } from "../support/environment.js"

// `rivet run` → local when the destination cannot be written or its disk fills up: a clear permanent error naming the
// path, and nothing half-done left behind (no temp file, no partial file under a final name, no manifest, no
// _SUCCESS, a previous run's markers untouched). Disk-full runs on a small tmpfs where the test may mount one (root
// with CAP_SYS_ADMIN), and always on a simulated disk (test/fixtures/enospc-preload.mjs) so both paths stay tested.

const PRELOAD = pathToFileURL(path.resolve(import.meta.dirname, "../fixtures/enospc-preload.mjs")).href
const MiB = 1024 * 1024
const PAGE = Number(spawnSync("getconf", ["PAGESIZE"], { encoding: "utf8" }).stdout?.trim()) || 4096

const mounts: Array<string> = []
const dirs: Array<string> = []

const mountTmpfs = (dir: string, options: string): boolean => {
  fs.mkdirSync(dir, { recursive: true })
  const mounted = spawnSync("mount", ["-t", "tmpfs", "-o", options, "tmpfs", dir], { stdio: "ignore" }).status === 0
  if (mounted) mounts.push(dir)
  return mounted
}

/** Whether this process may mount a tmpfs (root with CAP_SYS_ADMIN); elsewhere only the simulated disk runs. */
const canMount = (() => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-h7-probe-"))
  dirs.push(dir)
  const mounted = mountTmpfs(dir, `size=${PAGE}`)
  if (mounted) {
    spawnSync("umount", ["-l", dir], { stdio: "ignore" })
    mounts.pop()
  }
  return mounted
})()

const NO_MOUNT = "this process may not mount a tmpfs (needs root with CAP_SYS_ADMIN); the simulated disk's cases still run"

afterAll(() => {
  for (const dir of mounts.reverse()) spawnSync("umount", ["-l", dir], { stdio: "ignore" })
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** A config in a fresh directory with the given exports (YAML flow mappings); returns the config file and its dir. */
const setup = (...exports: ReadonlyArray<string>) => {
  const config = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }\nexports:\n${exports.map((spec) => `  - ${spec}\n`).join("")}`)
  const dir = path.dirname(config)
  dirs.push(dir)
  return { config, dir, out: path.join(dir, "out") }
}

/** ~5 MB of CSV in one part. */
const BIG = "{ name: h7_big, format: csv, destination: { type: local, path: out }, query: 'select i as id, md5(i::text) as h1, md5((i * 7)::text) as h2 from generate_series(1, 70000) as i' }"
/** Exactly 1 MiB of CSV: the header `x` and 10,485 rows of 99 letters, then one of 73 (2 + 10,485 × 100 + 74 bytes). */
const ONE_MIB = "{ name: h7_mib, format: csv, destination: { type: local, path: out }, query: 'select repeat(''a'', case when i < 10486 then 99 else 73 end) as x from generate_series(1, 10486) as i' }"

const withDisk = (out: string, bytes: number) => ({
  NODE_OPTIONS: `${process.env["NODE_OPTIONS"] ?? ""} --import=${PRELOAD}`,
  RIVET_TEST_ENOSPC_DIR: out,
  RIVET_TEST_ENOSPC_BYTES: String(bytes)
})

/** The simulated disk's write log: `<file name> @<position> <outcome>` per write. */
const diskWrites = (stderr: string) =>
  [...stderr.matchAll(/^enospc-preload: (\S+) @(\S+) \+\d+ (ok|short|ENOSPC)$/gm)].map(([, file, position, outcome]) => ({
    file: file!,
    position: position!,
    outcome: outcome!
  }))

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The CLI failed permanently because the disk holding `out` is full while writing `key` (a pattern), with a hint. */
const expectDiskFull = (run: CliResult, out: string, key: string) => {
  expect(run.code).toBe(1)
  expect(run.stderr).toMatch(
    new RegExp(`^Error: cannot write ${key}: the disk is full: no space left on the file system holding ${escape(out)} \\(ENOSPC\\)$`, "m")
  )
  expect(run.stderr).toContain(`Hint: free space on that file system (see df -h ${out})`)
  expect(run.stderr).not.toMatch(/\n\s+at /) // no stack trace
}

const BIG_PART = "h7_big_\\d{8}_\\d{6}_\\d{3}\\.csv"

const sha256 = (bytes: Buffer) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`

/** Every file under a final name holds the exact 1 MiB export: nothing partial. */
const expectCompleteMibParts = (out: string, count: number) => {
  const parts = filesUnder(out).filter((file) => file.endsWith(".csv"))
  expect(parts).toHaveLength(count)
  for (const part of parts) {
    const text = fs.readFileSync(path.join(out, part), "utf8")
    expect(text.length).toBe(MiB)
    expect(text.endsWith(`\n${"a".repeat(73)}\n`)).toBe(true)
  }
  return parts
}

/**
 * Runs the 1 MiB export twice: the first run succeeds, the second (`second`) commits its part but cannot write its
 * manifest (the kept copy, written first). The first run's manifest and _SUCCESS must stay byte for byte, still
 * matching each other.
 */
const expectManifestFailureKeepsPreviousRun = async (
  config: string,
  out: string,
  second: () => Promise<CliResult>
): Promise<CliResult> => {
  const first = await runCli(["run", "-c", config])
  expect(first.code).toBe(0)
  expect(first.stderr).toMatch(/status:\s+success/)
  const [firstPart] = expectCompleteMibParts(out, 1)
  const manifest = fs.readFileSync(path.join(out, "manifest.json"))
  const success = fs.readFileSync(path.join(out, "_SUCCESS"))
  expect(success.toString()).toBe(`${sha256(manifest)}\n`)

  const run = await second()
  expectDiskFull(run, path.join(out, "_manifests"), "_manifests/h7_mib_\\d{8}T\\d{6}\\.\\d{3}\\.json")
  // The part committed before the manifest stays, complete and unlisted (at-least-once); no temp file is left.
  expect(filesUnder(out).filter((file) => !file.endsWith(".csv"))).toEqual([
    "_SUCCESS",
    `_manifests/${readManifest(out).run_id}.json`,
    "manifest.json"
  ])
  expectCompleteMibParts(out, 2)
  expect(fs.readFileSync(path.join(out, "manifest.json")).equals(manifest)).toBe(true)
  expect(fs.readFileSync(path.join(out, "_SUCCESS")).equals(success)).toBe(true)
  expect(readManifest(out).parts.map((part) => part.path)).toEqual([firstPart])
  return run
}

const exportTo = (name: string, destination: string) =>
  `{ name: ${name}, query: select 1 as a, format: csv, destination: { type: local, path: ${destination} } }`

/** Runs the config (every export expected to fail) and returns each export's error message and hint. */
const failingRun = async (config: string, exportCount: number) => {
  const run = await runCli(["run", "-c", config, "--json"])
  expect(run.code).toBe(1)
  const events = run.stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  const finished = events.filter((event) => event["event"] === "export_finished")
  expect(finished.map((event) => event["status"])).toEqual(finished.map(() => "failed"))
  expect(finished).toHaveLength(exportCount)
  return (name: string) => {
    const message = String(finished.find((event) => event["export"] === name)?.["error"])
    const hint = events.find((event) => event["event"] === "error" && event["message"] === message)?.["hint"]
    return { message, hint }
  }
}

describe("rivet run → local: destination not writable (exit 1, the path and the reason with a hint, nothing written)", () => {
  it("a file where a directory of the path should be", async () => {
    const { config, dir } = setup(exportTo("h7_notdir", "blocker/out"))
    fs.writeFileSync(path.join(dir, "blocker"), "a file, not a directory")
    const errorOf = await failingRun(config, 1)
    expect(errorOf("h7_notdir")).toEqual({
      message: `cannot list the directory: a part of ${path.join(dir, "blocker/out")} is a file where a directory is needed`,
      hint: "the destination path must be a directory or not exist yet; move the file that is in the way"
    })
    expect(fs.readFileSync(path.join(dir, "blocker"), "utf8")).toBe("a file, not a directory")
  })

  it("a read-only file system (a tmpfs mounted ro), at the destination and below it", async (context) => {
    if (!canMount) return skipBecause(context, NO_MOUNT)
    const { config, dir } = setup(exportTo("h7_ro", "ro"), exportTo("h7_ro_nested", "ro/nested/deeper"))
    const ro = path.join(dir, "ro")
    expect(mountTmpfs(ro, "ro,size=1m")).toBe(true)
    const errorOf = await failingRun(config, 2)
    expect(errorOf("h7_ro")).toEqual({
      message: expect.stringMatching(
        new RegExp(`^cannot create a temp file: ${escape(ro)}/\\.h7_ro_\\S+\\.csv\\.tmp-\\S+ is on a read-only file system \\(EROFS\\)$`)
      ),
      hint: "choose a destination path on a writable file system"
    })
    // Node's recursive mkdir says ENOENT here; the sink must report the read-only file system instead.
    expect(errorOf("h7_ro_nested")).toEqual({
      message: `cannot create the directory: ${ro}/nested/deeper is on a read-only file system (EROFS)`,
      hint: "choose a destination path on a writable file system"
    })
    expect(filesUnder(ro)).toEqual([])
  })

  it("a directory the user may not write to (mode 0555; as root, whom modes do not stop, chattr +i)", async (context) => {
    const { config, dir } = setup(exportTo("h7_denied", "denied"))
    const denied = path.join(dir, "denied")
    fs.mkdirSync(denied)
    const denial = denyWrites(denied)
    if ("reason" in denial) return skipBecause(context, denial.reason)
    try {
      const errorOf = await failingRun(config, 1)
      expect(errorOf("h7_denied"), denial.how).toEqual({
        message: expect.stringMatching(new RegExp(`^cannot create a temp file: permission denied on ${escape(dir)}/denied/\\.h7_denied_`)),
        hint: `check that the user running rivet may create and write files in ${dir}/denied (directory permissions and ownership)`
      })
    } finally {
      denial.undo()
    }
    expect(filesUnder(denied)).toEqual([])
  })
})

describe("rivet run → local: disk full", () => {
  it("tmpfs: a data part that does not fit fails with ENOSPC and leaves nothing", async (context) => {
    if (!canMount) return skipBecause(context, NO_MOUNT)
    const { config, out } = setup(BIG)
    expect(mountTmpfs(out, "size=2m")).toBe(true)
    const run = await runCli(["run", "-c", config])
    expectDiskFull(run, out, BIG_PART)
    expect(filesUnder(out)).toEqual([])
    const space = fs.statfsSync(out)
    expect(space.bfree).toBe(space.blocks) // the temp file's blocks were given back
  })

  it("tmpfs: when the manifest does not fit, the previous run's manifest and _SUCCESS stay", async (context) => {
    if (!canMount) return skipBecause(context, NO_MOUNT)
    const { config, out } = setup(ONE_MIB)
    // Room for two 1 MiB parts and three one-page markers (kept manifest, manifest.json, _SUCCESS): the second run's
    // part fills the disk to the last page.
    expect(mountTmpfs(out, `size=${2 * MiB + 3 * PAGE}`)).toBe(true)
    await expectManifestFailureKeepsPreviousRun(config, out, () => runCli(["run", "-c", config]))
  })

  it("simulated disk: a write that fills it fails with ENOSPC, is not retried, and leaves nothing", async () => {
    const { config, out } = setup(BIG)
    const run = await runCli(["run", "-c", config], { env: withDisk(out, 2 * MiB + 1000) })
    expectDiskFull(run, out, BIG_PART)
    const writes = diskWrites(run.stderr)
    expect(writes.map((write) => write.outcome)).toEqual(expect.arrayContaining(["short", "ENOSPC"]))
    // One temp file, each position written once: a retry would write the failed block again.
    expect(new Set(writes.map((write) => write.file)).size).toBe(1)
    expect(new Set(writes.map((write) => `${write.file}@${write.position}`)).size).toBe(writes.length)
    expect(filesUnder(out)).toEqual([])
  })

  it("simulated disk: when the manifest does not fit, the previous run's manifest and _SUCCESS stay", async () => {
    const { config, out } = setup(ONE_MIB)
    const run = await expectManifestFailureKeepsPreviousRun(config, out, () =>
      runCli(["run", "-c", config], { env: withDisk(out, MiB) })
    )
    // The part fit exactly; the kept manifest's one attempt failed and neither manifest.json nor _SUCCESS was attempted.
    expect(diskWrites(run.stderr).map((write) => `${write.file.replace(/_\d{8}(_\d{6}_|T\d{6}\.)\d{3}/, "").replace(/\.tmp-\S+$/, "")} ${write.outcome}`)).toEqual([
      ".h7_mib.csv ok",
      ".h7_mib.json ENOSPC"
    ])
  })
})
