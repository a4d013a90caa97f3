import { describe, expect, it } from "vitest"
import { renderRunSummary, shownOutput } from "../../src/cli/run-summary.js"
import type { ExportOutcome } from "../../src/core/progress.js"

const outcome = (fields: Partial<ExportOutcome> & Pick<ExportOutcome, "exportName">): ExportOutcome => ({
  runId: `${fields.exportName}_1`,
  status: "success",
  rows: 0,
  files: 0,
  bytes: 0,
  retries: 0,
  durationMs: 0,
  uri: "",
  ...fields
})

describe("the summary table at the end of rivet run on a terminal", () => {
  it("one row per export, numbers right-aligned, a totals line with the run's wall-clock time", () => {
    const text = renderRunSummary(
      [
        outcome({ exportName: "orders", rows: 1_234_567, files: 3, bytes: 50 * 1024 * 1024, durationMs: 61_500, uri: "s3://lake/orders/" }),
        outcome({ exportName: "customers", status: "failed", durationMs: 800, error: "boom" })
      ],
      63_000
    )
    expect(text.split("\n")).toEqual([
      "EXPORT     STATUS        ROWS  FILES     BYTES  DURATION  OUTPUT",
      "orders     success  1,234,567      3  50.0 MiB  1m 01.5s  s3://lake/orders/",
      "customers  failed           -      -         -     800ms  -",
      "2 exports in 1m 03.0s: 1 done, 1 failed; 1,234,567 rows, 50.0 MiB"
    ])
  })

  it("a RETRIES column only when some export retried, and a line for objects an interrupted attempt left", () => {
    const text = renderRunSummary(
      [outcome({ exportName: "orders", rows: 10, files: 1, bytes: 10, retries: 2, untracked: ["orders_chunk3_ab.parquet"], uri: "file:///out/" })],
      1000
    )
    expect(text.split("\n")[0]).toBe("EXPORT  STATUS   ROWS  FILES  BYTES  DURATION  RETRIES  OUTPUT")
    expect(text).toContain("orders: 1 object(s) from an interrupted attempt, not in the manifest: orders_chunk3_ab.parquet")
    expect(renderRunSummary([outcome({ exportName: "orders" })], 1000)).not.toContain("RETRIES")
  })

  it("a local destination is shown as a path, relative to the working directory when inside it", () => {
    expect(shownOutput("file:///home/me/rivet/output/orders", "/home/me/rivet")).toBe("output/orders")
    expect(shownOutput("file:///data/exports/orders", "/home/me/rivet")).toBe("/data/exports/orders")
    expect(shownOutput("s3://lake/raw/orders/", "/home/me/rivet")).toBe("s3://lake/raw/orders/")
    expect(shownOutput("", "/home/me/rivet")).toBe("-")
  })
})
