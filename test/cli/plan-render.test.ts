import { describe, expect, it } from "vitest"
import { renderPlannedExport } from "../../src/cli/plan-render.js"
import type { PlannedExport } from "../../src/engine/plan/model.js"

// The cdc section of `rivet plan` (the plan kinds/cdc.ts makes): the slot, where the changes start and end, the WAL
// pending; no row estimate (a change log has none, and ANALYZE would not give one). A live plan: test/e2e/cdc-ops.test.ts.

const plan = (changes: PlannedExport["changes"]): PlannedExport => ({
  name: "orders",
  mode: "cdc",
  fingerprint: "sha256:0",
  source: "postgres://rivet:***@db:5432/shop",
  statements: [],
  columns: [
    { name: "__op", type: "string" },
    { name: "__pos", type: "string" },
    { name: "id", type: "int64" }
  ],
  estimated_rows: null,
  changes,
  destination: "file:///srv/out/orders",
  naming: "orders_{changes|snapshot}_{position}_{NNNNNN}.parquet",
  notices: []
})

const base = { slot: "rivet_orders", publication: "rivet_orders", current: "00000016/B3A01C20" }

describe("rivet plan: mode: cdc", () => {
  it("a later run: the slot's confirmed position, the changes after the stored one, the pending WAL", () => {
    const text = renderPlannedExport(
      plan({ ...base, from: "00000016/B374D848", snapshot: false, slot_confirmed: "00000016/B374D848", pending_bytes: 2_936_012 })
    )
    expect(text.split("\n")).toEqual([
      "── orders ──────────────────────────────────────────────────",
      "  mode:        cdc",
      "  source:      postgres://rivet:***@db:5432/shop",
      "  slot:        rivet_orders (publication rivet_orders): confirmed at 00000016/B374D848",
      "  changes:     after 00000016/B374D848 up to 00000016/B3A01C20",
      "  pending WAL: 2.8 MiB",
      "  columns:     3: __op string, __pos string, id int64",
      "  destination: file:///srv/out/orders",
      "  naming:      orders_{changes|snapshot}_{position}_{NNNNNN}.parquet"
    ])
  })

  it("a first run: the slot not created yet, the snapshot first; initial: none on an existing slot starts after its position", () => {
    const first = renderPlannedExport(plan({ ...base, from: null, snapshot: true, slot_confirmed: null, pending_bytes: null }))
    expect(first).toContain("\n  slot:        rivet_orders (publication rivet_orders): not created yet\n")
    expect(first).toContain("\n  changes:     first run: the table's snapshot, then the changes up to 00000016/B3A01C20\n")
    expect(first).not.toContain("pending WAL")
    expect(first).not.toContain("estimated rows")
    const none = renderPlannedExport(plan({ ...base, from: null, snapshot: false, slot_confirmed: "00000016/B0000000", pending_bytes: 0 }))
    expect(none).toContain("\n  changes:     first run: the changes after the slot's position 00000016/B0000000 up to 00000016/B3A01C20\n")
  })
})
