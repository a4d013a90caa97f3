import { describe, expect, it } from "vitest"
import { refusedRustKeys } from "../../src/config/rust-keys.js"

// The Rust rivet's keys Rivet still refuses, each with why (the hint `rivet check` prints). A key mapped onto a
// setting of Rivet's (src/config/rust-spelling.ts) leaves this list; one added here needs its reason.
const STILL_REFUSED = {
  "(top level)": ["parallel_export_processes", "load"],
  source: ["mongo"],
  "exports[]": [
    "chunk_dense", "chunk_by_days", "keyset_incremental", "verify",
    "partition_granularity", "shape_drift_warn_factor", "tables", "target", "load"
  ],
  "exports[].destination": ["credentials_file"],
  "exports[].quality": ["unique_max_entries"],
  "source.type": ["mongo", "mssql"],
  "exports[].destination.type": ["gcs", "azure"]
}

describe("the Rust rivet's keys still refused", () => {
  it("are exactly these, each with a hint saying what to write instead", () => {
    const refused = refusedRustKeys()
    const byPlace: Record<string, Array<string>> = {}
    for (const { at, key } of refused) (byPlace[at] ??= []).push(key)
    expect(byPlace).toEqual(STILL_REFUSED)
    for (const { at, key, hint } of refused) expect(hint.length, `${at} ${key}`).toBeGreaterThan(20)
  })

  it("SQL Server and GCS say so", () => {
    const hintOf = (at: string, key: string) => refusedRustKeys().find((row) => row.at === at && row.key === key)?.hint
    expect(hintOf("source.type", "mssql")).toBe("SQL Server is not a supported source")
    expect(hintOf("exports[].destination.type", "gcs")).toMatch(/there is no gcs destination/)
  })
})
