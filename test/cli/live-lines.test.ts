import { describe, expect, it } from "vitest"
import { addSample, completion, exportLine, finishedLine, fitWidth, formatEta, type Lane } from "../../src/cli/live-lines.js"
import type { ExportProgress } from "../../src/core/progress.js"

const T0 = 1_800_000_000_000

const progress = (fields: Partial<ExportProgress>): ExportProgress => ({
  exportName: "orders",
  startedAt: T0,
  rows: 0,
  bytes: 0,
  parts: 0,
  retries: 0,
  ...fields
})

/** A lane that read `rows` at a steady 100 000 rows/s until `now`. */
const steady = (fields: Partial<ExportProgress>, now: number): Lane => ({
  progress: progress(fields),
  samples: [
    { at: now - 2000, rows: (fields.rows ?? 0) - 200_000 },
    { at: now, rows: fields.rows ?? 0 }
  ]
})

describe("the live line of a running export", () => {
  it("shows a bar, the percent of the estimated rows and an ETA from the recent rate", () => {
    const now = T0 + 5000
    const line = exportLine(steady({ rows: 500_000, estimatedRows: 2_000_000, bytes: 32 * 1024 * 1024 }, now), now)
    expect(line).toContain("█████░░░░░░░░░░░░░░░")
    expect(line).toContain(" 25%")
    // 1.5M rows left at 100K rows/s.
    expect(line).toContain("ETA 15s")
    expect(line).toContain("500.0K/~2.00M rows")
    expect(line).toContain("100.0K rows/s")
    expect(line).toContain("32.0 MiB")
  })

  it("past the estimate (statistics are approximate): no percent above 100 and no ETA, a sweeping bar instead", () => {
    const now = T0 + 5000
    const line = exportLine(steady({ rows: 2_800_000, estimatedRows: 2_000_000 }, now), now)
    expect(line).not.toMatch(/\d+%/)
    expect(line).not.toContain("ETA")
    expect(line).toContain("████")
    expect(line).toContain("2.80M rows (past the ~2.00M estimate)")
  })

  it("at exactly the estimate the bar is full and the export is finishing", () => {
    const now = T0 + 5000
    const line = exportLine(steady({ rows: 2_000_000, estimatedRows: 2_000_000 }, now), now)
    expect(line).toContain(`${"█".repeat(20)}  100%  finishing`)
  })

  it("without an estimate, the planned chunks give the percent; without either, only counters and rows/s", () => {
    const now = T0 + 10_000
    const chunked = exportLine(steady({ rows: 300_000, units: { done: 3, total: 12, label: "chunks" } }, now), now)
    expect(chunked).toContain(" 25%")
    // A quarter took 10 s: three quarters take 30 s more.
    expect(chunked).toContain("ETA 30s")
    expect(chunked).toContain("3/12 chunks")
    const unknown = exportLine(steady({ rows: 300_000 }, now), now)
    expect(unknown).not.toMatch(/%|ETA|█/)
    expect(unknown).toContain("300.0K rows")
    expect(unknown).toContain("100.0K rows/s")
  })

  it("shows retries once there are some", () => {
    const now = T0 + 1000
    expect(exportLine(steady({ rows: 300_000 }, now), now)).not.toContain("retr")
    expect(exportLine(steady({ rows: 300_000, retries: 2 }, now), now)).toContain("2 retries")
  })

  it("an estimate of zero rows is no estimate", () => {
    expect(completion(progress({ rows: 10, estimatedRows: 0 }))).toBeUndefined()
  })
})

describe("helpers of the live view", () => {
  it("keeps the samples of the last 10 s, and at least the previous one", () => {
    const samples = [0, 4000, 8000, 12_000].reduce(
      (kept, at) => addSample(kept, { at: T0 + at, rows: at }),
      [] as ReadonlyArray<{ at: number; rows: number }>
    )
    expect(samples.map((sample) => sample.at - T0)).toEqual([4000, 8000, 12_000])
    expect(addSample([{ at: T0, rows: 0 }], { at: T0 + 60_000, rows: 5 }).map((sample) => sample.at - T0)).toEqual([0, 60_000])
  })

  it("cuts a line to the terminal's width so it never wraps", () => {
    expect(fitWidth("x".repeat(200), 80)).toHaveLength(79)
    expect(fitWidth("x".repeat(200), 80).endsWith("…")).toBe(true)
    expect(fitWidth("short", 80)).toBe("short")
  })

  it("names the finished exports under the live lines, the newest that fit the width, failures marked", () => {
    expect(finishedLine([{ exportName: "a", status: "success" }, { exportName: "b", status: "failed" }], 80)).toBe("✓ 2 done: a, ✗ b")
    const many = Array.from({ length: 30 }, (_, i) => ({ exportName: `export_${String(i).padStart(2, "0")}`, status: "success" }))
    const line = finishedLine(many, 60)
    expect(line.startsWith("✓ 30 done: …, ")).toBe(true)
    expect(line.endsWith("export_28, export_29")).toBe(true)
    expect(line.length).toBeLessThanOrEqual(59)
  })

  it("formats an ETA without tenths", () => {
    expect([formatEta(400), formatEta(12_400), formatEta(245_000), formatEta(7_380_000)]).toEqual(["1s", "12s", "4m 05s", "2h 03m"])
  })
})
