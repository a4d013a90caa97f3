import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Manifest } from "../../src/core/manifest.js"
import { runCli, writeConfig } from "../support/cli.js"
import { readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import { sha256Hex } from "./s3-support.js"

// `rivet validate` and `rivet run --validate` through the built CLI: one real export per format, then each kind of
// damage applied to its own copy of the output, each expected to give its own finding.

const TEXT = `'row ' || i || CASE WHEN i % 7 = 0 THEN E'\\nsecond line, "quoted"' ELSE '' END`
const EXPORTS = {
  vpq: { rows: 20_000, format: "parquet" },
  vcsvgz: { rows: 5_000, format: "csv" },
  vcsv: { rows: 12_000, format: "csv" },
  vnd: { rows: 3_000, format: "ndjson" }
} as const

const configText = () => `source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: vpq
    query: select i as id, md5(i::text) as h, ${TEXT} as t from generate_series(1, ${EXPORTS.vpq.rows}) as i
    batch_size: 1000
    row_group_size: 1000
    max_file_size: 96KB
    destination: { type: local, path: out/vpq }
  - name: vcsvgz
    query: select i as id, ${TEXT} as t from generate_series(1, ${EXPORTS.vcsvgz.rows}) as i
    format: csv
    compression: gzip
    destination: { type: local, path: out/vcsvgz }
  - name: vcsv
    query: select i as id, ${TEXT} as t, case when i % 5 = 0 then null else i end as n from generate_series(1, ${EXPORTS.vcsv.rows}) as i
    format: csv
    batch_size: 500
    max_file_size: 64KB
    destination: { type: local, path: out/vcsv }
  - name: vnd
    query: select i as id, ${TEXT} as t from generate_series(1, ${EXPORTS.vnd.rows}) as i
    format: ndjson
    destination: { type: local, path: out/vnd }
`

let base: string
const copies: Array<string> = []

/** A fresh copy of the config and everything the run wrote. */
const freshCopy = (): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-validate-"))
  fs.cpSync(base, dir, { recursive: true })
  copies.push(dir)
  return dir
}

const out = (dir: string, name: string) => path.join(dir, "out", name)
const manifestOf = (dir: string, name: string): Manifest => readManifest(out(dir, name))
const validate = (dir: string, ...args: Array<string>) => runCli(["validate", "-c", path.join(dir, "rivet.yaml"), ...args])

/** Rewrites manifest.json of an export as Rivet would (pretty JSON, newline), optionally re-signing _SUCCESS. */
const rewriteManifest = (dir: string, name: string, edit: (manifest: Record<string, unknown>) => void, resign = false) => {
  const manifest = manifestOf(dir, name) as unknown as Record<string, unknown>
  edit(manifest)
  const bytes = `${JSON.stringify(manifest, null, 2)}\n`
  fs.writeFileSync(path.join(out(dir, name), "manifest.json"), bytes)
  if (resign) fs.writeFileSync(path.join(out(dir, name), "_SUCCESS"), `sha256:${sha256Hex(bytes)}\n`)
}

/** The kept copy of the run in an export's manifest.json, relative to its destination. */
const keptKey = (dir: string, name: string) => `_manifests/${manifestOf(dir, name).run_id}.json`

const count = (value: number) => value.toLocaleString("en-US")
const findingLines = (stdout: string) => stdout.split("\n").filter((line) => /^(FAIL|WARN) /.test(line))

beforeAll(async () => {
  const config = writeConfig(configText())
  base = path.dirname(config)
  const run = await runCli(["run", "-c", config, "--validate"])
  expect(run.stderr).not.toContain("Error:")
  expect(run.code).toBe(0)
  for (const name of Object.keys(EXPORTS)) expect(run.stderr).toMatch(new RegExp(`^OK {3}${name}: \\d+ parts?, `, "m"))
}, 120_000)

afterAll(() => {
  for (const dir of [base, ...copies]) if (dir) fs.rmSync(dir, { recursive: true, force: true })
})

describe("rivet validate", () => {
  it("a clean run validates: every export OK with its parts and rows, exit 0", async () => {
    for (const name of Object.keys(EXPORTS)) {
      const latest = fs.readFileSync(path.join(out(base, name), "manifest.json"))
      expect(fs.readFileSync(path.join(out(base, name), keptKey(base, name)))).toEqual(latest)
    }
    expect(manifestOf(base, "vpq").parts.length).toBeGreaterThan(2)
    expect(manifestOf(base, "vcsv").parts.length).toBeGreaterThan(2)
    const result = await validate(base)
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    for (const [name, { rows }] of Object.entries(EXPORTS)) {
      const parts = manifestOf(base, name).parts.length
      expect(result.stdout).toContain(`OK   ${name}: ${parts} part${parts === 1 ? "" : "s"}, ${count(rows)} rows verified\n`)
    }
    expect(result.stdout).toContain("4 exports validated: 4 ok, 0 failed (0 failures, 0 warnings)")
  })

  it("a deleted part: PART_MISSING, exit 3, the other exports still OK", async () => {
    const dir = freshCopy()
    const part = manifestOf(dir, "vpq").parts[1]!.path
    fs.rmSync(path.join(out(dir, "vpq"), part))
    const result = await validate(dir)
    expect(result.code).toBe(3)
    expect(findingLines(result.stdout)).toEqual([
      `FAIL vpq: PART_MISSING ${part}: listed in the manifest but not at the destination`
    ])
    expect(result.stdout).toContain("OK   vnd:")
    expect(result.stdout).toContain("4 exports validated: 3 ok, 1 failed (1 failure, 0 warnings)")
  })

  it("a truncated part: PART_SIZE_MISMATCH with both sizes", async () => {
    const dir = freshCopy()
    const { path: part, size_bytes } = manifestOf(dir, "vcsvgz").parts[0]!
    fs.truncateSync(path.join(out(dir, "vcsvgz"), part), size_bytes - 10)
    const result = await validate(dir, "-e", "vcsvgz")
    expect(result.code).toBe(3)
    expect(findingLines(result.stdout)).toEqual([
      `FAIL vcsvgz: PART_SIZE_MISMATCH ${part}: ${count(size_bytes - 10)} bytes but the manifest records ${count(size_bytes)} (truncated)`
    ])
  })

  it("one modified byte (same size): PART_CHECKSUM_MISMATCH naming both hashes — NDJSON and Parquet", async () => {
    for (const name of ["vnd", "vpq"]) {
      const dir = freshCopy()
      const { path: part, content_fingerprint } = manifestOf(dir, name).parts[0]!
      const file = path.join(out(dir, name), part)
      const bytes = fs.readFileSync(file)
      // A digit in the middle of an NDJSON line stays valid JSON; in Parquet it lands in a data page.
      const at = bytes.indexOf("5", Math.floor(bytes.length / 2))
      bytes[at] = "6".charCodeAt(0)
      fs.writeFileSync(file, bytes)
      const result = await validate(dir, "-e", name)
      expect(result.code).toBe(3)
      const lines = findingLines(result.stdout)
      expect(lines[0]).toBe(
        `FAIL ${name}: PART_CHECKSUM_MISMATCH ${part}: sha256:${sha256Hex(bytes)} expected ${content_fingerprint} (same size, different bytes: modified after it was written)`
      )
      expect(result.stdout).not.toContain("PART_SIZE_MISMATCH")
    }
  })

  it("a tampered manifest (row_count edited): MANIFEST_INVALID, SUCCESS_STALE and KEPT_MANIFEST_MISMATCH", async () => {
    const dir = freshCopy()
    rewriteManifest(dir, "vcsv", (manifest) => {
      manifest["row_count"] = EXPORTS.vcsv.rows + 1
    })
    const result = await validate(dir, "-e", "vcsv")
    expect(result.code).toBe(3)
    const lines = findingLines(result.stdout)
    expect(lines[0]).toBe(
      `FAIL vcsv: MANIFEST_INVALID manifest.json: row_count is ${count(EXPORTS.vcsv.rows + 1)} but its parts hold ${count(EXPORTS.vcsv.rows)} rows (tampered manifest)`
    )
    expect(lines[1]).toMatch(/^FAIL vcsv: SUCCESS_STALE _SUCCESS: records sha256:[0-9a-f]{64} but manifest\.json hashes to sha256:[0-9a-f]{64}: /)
    expect(lines[2]).toBe(
      `FAIL vcsv: KEPT_MANIFEST_MISMATCH ${keptKey(dir, "vcsv")}: differs from manifest.json, which is the same run: one of them was changed after the run wrote them (_SUCCESS tells which one it vouches for)`
    )
    expect(lines).toHaveLength(3)
  })

  it("a stale _SUCCESS (manifest rewritten consistently, marker left as it was): SUCCESS_STALE, and the kept copy differs", async () => {
    const dir = freshCopy()
    const before = fs.readFileSync(path.join(out(dir, "vnd"), "manifest.json"))
    rewriteManifest(dir, "vnd", (manifest) => {
      manifest["finished_at"] = "2030-01-01T00:00:00.000Z"
    })
    const after = fs.readFileSync(path.join(out(dir, "vnd"), "manifest.json"))
    const result = await validate(dir, "-e", "vnd")
    expect(result.code).toBe(3)
    expect(findingLines(result.stdout)).toEqual([
      `FAIL vnd: SUCCESS_STALE _SUCCESS: records sha256:${sha256Hex(before)} but manifest.json hashes to sha256:${sha256Hex(after)}: the manifest changed after the run that wrote it finished, or a later run did not finish`,
      `FAIL vnd: KEPT_MANIFEST_MISMATCH ${keptKey(dir, "vnd")}: differs from manifest.json, which is the same run: one of them was changed after the run wrote them (_SUCCESS tells which one it vouches for)`
    ])
    // The kept copy is still the bytes _SUCCESS vouched for.
    expect(fs.readFileSync(path.join(out(dir, "vnd"), keptKey(dir, "vnd")))).toEqual(before)
  })

  it("rows edited consistently in a re-signed manifest: PART_ROW_COUNT from the file (CSV with quoted line feeds)", async () => {
    const dir = freshCopy()
    const { path: part, rows } = manifestOf(dir, "vcsv").parts[0]!
    rewriteManifest(
      dir,
      "vcsv",
      (manifest) => {
        const parts = manifest["parts"] as Array<{ rows: number }>
        parts[0]!.rows -= 1
        manifest["row_count"] = (manifest["row_count"] as number) - 1
      },
      true
    )
    const result = await validate(dir, "-e", "vcsv")
    expect(result.code).toBe(3)
    expect(findingLines(result.stdout)).toEqual([
      expect.stringMatching(/^FAIL vcsv: KEPT_MANIFEST_MISMATCH _manifests\/vcsv_\d{8}T\d{6}\.\d{3}\.json: /),
      `FAIL vcsv: PART_ROW_COUNT ${part}: ${count(rows)} rows counted but the manifest records ${count(rows - 1)}`
    ])
  })

  it("an untracked object is a warning (exit 0); --strict makes it a failure; temp files and other names are ignored", async () => {
    const dir = freshCopy()
    const root = out(dir, "vpq")
    const part = manifestOf(dir, "vpq").parts[0]!.path
    fs.copyFileSync(path.join(root, part), path.join(root, "vpq_20200101_000000_000.parquet"))
    fs.copyFileSync(path.join(root, part), path.join(root, `.${part}.tmp-1-0123456789ab`))
    fs.copyFileSync(path.join(root, part), path.join(root, "vpqx_20200101_000000_000.parquet"))
    fs.writeFileSync(path.join(root, "vpq_20200101_000000_000.csv"), "not this format\n")
    const message =
      "UNTRACKED_OBJECT vpq_20200101_000000_000.parquet: not listed in manifest.json or any kept manifest (named before the oldest kept run started: most likely a part of a run from before manifests were kept, or of a run whose kept manifest was deleted)"
    const lenient = await validate(dir, "-e", "vpq")
    expect(lenient.code).toBe(0)
    expect(findingLines(lenient.stdout)).toEqual([`WARN vpq: ${message}`])
    expect(lenient.stdout).toMatch(/^OK {3}vpq: \d+ parts, 20,000 rows verified \(1 warning\)$/m)
    const strict = await validate(dir, "-e", "vpq", "--strict")
    expect(strict.code).toBe(3)
    expect(findingLines(strict.stdout)).toEqual([`FAIL vpq: ${message}`])
    expect(strict.stdout).toContain("1 export validated: 0 ok, 1 failed (1 failure, 0 warnings)")

    // A destination written before runs kept their manifests validates as it always did.
    fs.rmSync(path.join(root, "_manifests"), { recursive: true })
    const legacy = await validate(dir, "-e", "vpq")
    expect(legacy.code).toBe(0)
    expect(findingLines(legacy.stdout)).toEqual([
      "WARN vpq: UNTRACKED_OBJECT vpq_20200101_000000_000.parquet: not listed in manifest.json (named before the run in the manifest started: most likely a part of an earlier run)"
    ])
    expect(legacy.stdout).toMatch(/^OK {3}vpq: \d+ parts, 20,000 rows verified \(1 warning\)$/m)
  })

  it("missing and malformed markers each have their own code", async () => {
    const noSuccess = freshCopy()
    fs.rmSync(path.join(out(noSuccess, "vnd"), "_SUCCESS"))
    const missing = await validate(noSuccess, "-e", "vnd")
    expect(missing.code).toBe(3)
    expect(findingLines(missing.stdout)).toEqual([
      "FAIL vnd: SUCCESS_MISSING _SUCCESS: not found: the run that wrote manifest.json did not finish, or the marker was deleted"
    ])

    const malformed = freshCopy()
    fs.writeFileSync(path.join(out(malformed, "vnd"), "_SUCCESS"), "done\n")
    expect(findingLines((await validate(malformed, "-e", "vnd")).stdout)[0]).toMatch(/^FAIL vnd: SUCCESS_MALFORMED _SUCCESS: holds "done\\n"/)

    const noManifest = freshCopy()
    fs.rmSync(path.join(out(noManifest, "vnd"), "manifest.json"))
    const gone = await validate(noManifest, "-e", "vnd")
    expect(gone.code).toBe(3)
    expect(findingLines(gone.stdout)).toEqual([
      `FAIL vnd: MANIFEST_MISSING manifest.json: not found at file://${out(noManifest, "vnd")}: the export has not completed a run here, or the manifest was deleted`
    ])

    const garbled = freshCopy()
    fs.writeFileSync(path.join(out(garbled, "vnd"), "manifest.json"), "{ not json")
    const lines = findingLines((await validate(garbled, "-e", "vnd")).stdout)
    expect(lines[0]).toMatch(/^FAIL vnd: MANIFEST_INVALID manifest\.json: not valid JSON \(/)
    expect(lines[1]).toMatch(/^FAIL vnd: SUCCESS_STALE /)

    const escaping = freshCopy()
    rewriteManifest(escaping, "vnd", (manifest) => {
      ;(manifest["parts"] as Array<{ path: string }>)[0]!.path = "../vcsv/manifest.json"
    }, true)
    expect(findingLines((await validate(escaping, "-e", "vnd")).stdout)).toEqual([
      "FAIL vnd: MANIFEST_INVALID manifest.json: unexpected content at parts[0].path: the key contains a `..` segment"
    ])
  })

  it("--json prints the report on stdout; an unknown export is a usage error", async () => {
    const dir = freshCopy()
    const part = manifestOf(dir, "vnd").parts[0]!.path
    fs.rmSync(path.join(out(dir, "vnd"), part))
    const result = await validate(dir, "-e", "vnd", "-e", "vcsv", "--json")
    expect(result.code).toBe(3)
    const report = JSON.parse(result.stdout) as {
      ok: boolean
      exports: Array<{ export: string; status: string; rows: number; findings: Array<Record<string, string>> }>
    }
    expect(report.ok).toBe(false)
    expect(report.exports.map((entry) => [entry.export, entry.status])).toEqual([
      ["vcsv", "ok"],
      ["vnd", "failed"]
    ])
    expect(report.exports[1]!.findings).toEqual([
      { code: "PART_MISSING", severity: "error", object: part, message: "listed in the manifest but not at the destination" }
    ])
    const unknown = await validate(dir, "-e", "nope")
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toContain("export 'nope' is not defined")
  })

  it("a stdout export has nothing to validate: SKIP with a warning; --strict fails it", async () => {
    const config = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: vstream, query: select 1 as a, format: csv, destination: { type: stdout } }
`)
    copies.push(path.dirname(config))
    const result = await runCli(["validate", "-c", config])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("WARN vstream: NOT_VERIFIED ")
    expect(result.stdout).toContain("SKIP vstream: nothing to validate (1 warning)")
    expect((await runCli(["validate", "-c", config, "--strict"])).code).toBe(3)
  })
})
