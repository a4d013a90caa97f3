import { describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"

const source = "source: { type: postgres, url: 'postgres://postgres@127.0.0.1:1/none' }"
const exportWith = (lines: string) => `${source}\nexports:\n  - name: orders\n${lines}`
const local = "    destination: { type: local, path: out }"

/** [what is wrong, config text, the path the error must name, a phrase the message must contain] */
const cases: ReadonlyArray<readonly [string, string, string, string]> = [
  ["YAML syntax", "source: { type: postgres\nexports: [", "line", "invalid YAML"],
  ["no exports key", source, "exports", "is required"],
  ["empty exports", `${source}\nexports: []`, "exports", "at least one export"],
  ["unknown top-level key", `${source}\nexport: []\nexports: []`, "export", "unknown key 'export'"],
  ["unknown source type", "source: { type: postgress, url: x }\nexports:\n  - { name: a, table: t, destination: { type: stdout } }", "source.type", "unknown source type"],
  ["source without url", "source: { type: postgres }\nexports:\n  - { name: a, table: t, destination: { type: stdout } }", "source", "url"],
  ["typo in destination key", exportWith("    table: orders\n    destination: { type: local, pth: out }"), "exports[0].destination.pth", "unknown key 'pth'"],
  ["unknown destination type", exportWith("    table: orders\n    destination: { type: lokal, path: out }"), "exports[0].destination.type", "unknown destination type"],
  ["table and query together", exportWith(`    table: orders\n    query: select 1\n${local}`), "exports[0]", "exactly one of 'table' or 'query'"],
  ["neither table nor query", exportWith(local), "exports[0]", "exactly one of 'table' or 'query'"],
  ["bad size", exportWith(`    table: orders\n    max_file_size: 12 parsecs\n${local}`), "exports[0].max_file_size", "invalid size"],
  ["unknown format", exportWith(`    table: orders\n    format: parket\n${local}`), "exports[0].format", "did you mean 'parquet'"],
  ["bad compression", exportWith(`    table: orders\n    compression: lz5\n${local}`), "exports[0].compression", "compression"],
  ["csv with zstd", exportWith(`    table: orders\n    format: csv\n    compression: zstd\n${local}`), "exports[0].compression", "gzip"],
  ["unset variable", exportWith(`    table: orders\n    destination: { type: local, path: "\${RIVET_UNSET_DIR_XYZ}" }`), "exports[0].destination.path", "RIVET_UNSET_DIR_XYZ"],
  ["duplicate export names", `${source}\nexports:\n  - { name: a, table: t, destination: { type: stdout } }\n  - { name: a, table: u, destination: { type: stdout } }`, "exports[1].name", "duplicate export name"],
  ["unsafe export name", `${source}\nexports:\n  - { name: ../../etc, table: t, destination: { type: stdout } }`, "exports[0].name", "invalid export name"],
  ["batch_size zero", exportWith(`    table: orders\n    batch_size: 0\n${local}`), "exports[0].batch_size", ""],
  ["bad column override", exportWith(`    table: orders\n    columns: { amount: { type: "decimal(99,2)" } }\n${local}`), "exports[0].columns.amount.type", "unknown type"],
  ["s3 without bucket", exportWith("    table: orders\n    destination: { type: s3, region: us-east-1 }"), "exports[0].destination.bucket", "required"],
  ["s3 non-loopback endpoint", exportWith("    table: orders\n    destination: { type: s3, bucket: my-bucket, region: us-east-1, endpoint: 'https://evil.example.com' }"), "exports[0].destination.endpoint", "loopback"]
]

describe("malformed configs", () => {
  it.concurrent.each(cases)("%s → one readable error naming the path, exit 1", async (_what, yaml, path, phrase) => {
    const result = await runCli(["run", "-c", writeConfig(yaml)])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    const errorLines = result.stderr.split("\n").filter((line) => line.startsWith("Error: "))
    expect(errorLines.length).toBeGreaterThanOrEqual(1)
    expect(errorLines[0]).toContain(path)
    expect(result.stderr).toContain(phrase)
    expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/) // no stack trace
  })

  it("a missing config file is a usage error, not a crash", async () => {
    const result = await runCli(["run", "-c", "/nonexistent/rivet.yaml"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("Error:")
    expect(result.stderr).not.toMatch(/\n\s+at .+:\d+:\d+/)
  })
})
