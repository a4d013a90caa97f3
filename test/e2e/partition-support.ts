import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { DuckDBInstance } from "@duckdb/node-api"

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")

/** Runs the built CLI under GNU time: its exit code, output and peak RSS in KiB. */
export const runMeasured = (args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  new Promise<{ code: number | null; stderr: string; peakKib: number }>((resolve, reject) => {
    const child = spawn("/usr/bin/time", ["-f", "PEAK_RSS_KIB=%M", process.execPath, BIN, ...args], {
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...env },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code) => {
      const peak = /PEAK_RSS_KIB=(\d+)/.exec(stderr)
      resolve({ code, stderr, peakKib: peak ? Number(peak[1]) : Number.NaN })
    })
  })

/** Rows of a DuckDB query as plain objects (bigints as strings). */
export const duckRows = async (query: string): Promise<Array<Record<string, unknown>>> => {
  const db = await DuckDBInstance.create(":memory:")
  const connection = await db.connect()
  try {
    const result = await connection.runAndReadAll(query)
    return result.getRowObjectsJS().map((row) =>
      Object.fromEntries(Object.entries(row).map(([key, value]) => [key, typeof value === "bigint" ? String(value) : value]))
    )
  } finally {
    connection.closeSync()
    db.closeSync()
  }
}

/** Files under `dir`, as paths relative to it (sorted). */
export const listFiles = (dir: string): Array<string> =>
  (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as Array<fs.Dirent>)
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort()

/** The DuckDB reader of a format over every data file under `dir`, with Hive partitioning. */
export const hiveScan = (format: string, dir: string): string => {
  const glob = `'${dir}/**/*.${format}'`
  switch (format) {
    case "parquet":
      return `read_parquet(${glob}, hive_partitioning = true)`
    case "csv":
      return `read_csv(${glob}, hive_partitioning = true, header = true, all_varchar = true)`
    default:
      return `read_json(${glob}, hive_partitioning = true, format = 'newline_delimited')`
  }
}
