import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { checkJson, renderCheck } from "../../src/cli/commands/doctor.js"
import { doctor, type DoctorOptions } from "../../src/commands/doctor.js"
import { SourceError } from "../../src/core/errors.js"
import type { ChangeLogStatus } from "../../src/core/plugin.js"
import { memorySource } from "../../src/testing/memory.js"
import { changeLogSource, configOf } from "./change-log-source.js"

// `rivet doctor` on mode: cdc exports, against a source whose change log answers as each test says: every check the
// source reports, the slot and its retained WAL (a warning past the threshold), and a source without a change log.

const GiB = 1024 ** 3

const status: ChangeLogStatus = {
  checks: [
    { name: "wal_level", ok: true, detail: "logical", hint: "ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL" },
    {
      name: "replica identity",
      ok: false,
      detail: "none: updates and deletes are not logged",
      hint: "ALTER TABLE public.orders REPLICA IDENTITY FULL, or give it a primary key"
    }
  ],
  slot: { name: "orders_slot", active: false, confirmed: "00000001/00000100", retainedBytes: 3 * GiB },
  current: "00000001/00000200"
}

const doctorOn = async (source: ReturnType<typeof changeLogSource>, options?: DoctorOptions) => {
  const config = await configOf(
    { type: "changelog" },
    [
      { name: "orders", table: "orders", mode: "cdc", cdc: { slot: "orders_slot" } },
      { name: "customers", table: "customers" }
    ],
    [source.plugin]
  )
  return Effect.runPromise(doctor(config, options))
}

const linesOf = (checks: ReadonlyArray<Parameters<typeof renderCheck>[0]>) => checks.map(renderCheck).join("\n").split("\n")

describe("rivet doctor on mode: cdc exports", () => {
  it("reports each check of the change log, then the slot: a warning when it retains more WAL than 1 GiB", async () => {
    const source = changeLogSource({ status })
    const checks = await doctorOn(source)
    expect(linesOf(checks)).toEqual([
      "[OK]  Source Changelog",
      "[OK]  Export orders",
      "[OK]  Change log orders (wal_level): logical",
      "[FAIL] Change log orders (replica identity): none: updates and deletes are not logged",
      "       Hint: ALTER TABLE public.orders REPLICA IDENTITY FULL, or give it a primary key",
      "[WARN] Change log orders (slot): orders_slot (inactive), confirmed at 00000001/00000100, 3.0 GiB of WAL retained",
      "       Hint: more than 1.0 GiB of WAL retained: the server keeps the WAL from the slot's position on until a run confirms " +
        "past it, so a slot nothing reads fills its disk — run the export (rivet run -c <config>), or drop the slot of an export " +
        "that is gone or paused (rivet state reset -c <config> -e orders); max_slot_wal_keep_size caps what a slot may retain",
      // customers is not a cdc export: no change log lines.
      "[OK]  Export customers",
      "[OK]  Destination Memory"
    ])
    // The request is the export's: its slot, and its publication (default: the slot's name).
    expect(source.calls).toEqual(["check", "inspect orders_slot orders_slot"])
    expect(checks.map(checkJson).slice(2, 5)).toEqual([
      { name: "Change log orders (wal_level)", status: "ok", detail: "logical" },
      {
        name: "Change log orders (replica identity)",
        status: "failed",
        error: {
          type: "SourceError",
          message: "none: updates and deletes are not logged",
          hint: "ALTER TABLE public.orders REPLICA IDENTITY FULL, or give it a primary key",
          exit_code: 1
        }
      },
      {
        name: "Change log orders (slot)",
        status: "warning",
        detail: "orders_slot (inactive), confirmed at 00000001/00000100, 3.0 GiB of WAL retained",
        hint: expect.stringContaining("more than 1.0 GiB of WAL retained"),
        slot: { name: "orders_slot", active: false, confirmed: "00000001/00000100", retained_bytes: 3 * GiB }
      }
    ])
  })

  it("below the threshold the slot is a plain line; a slot not created yet says the first run creates it", async () => {
    const below = await doctorOn(changeLogSource({ status }), { retainedWalWarningBytes: 4 * GiB })
    expect(linesOf(below)).toContain(
      "[OK]  Change log orders (slot): orders_slot (inactive), confirmed at 00000001/00000100, 3.0 GiB of WAL retained"
    )
    const none = await doctorOn(changeLogSource({ status: { checks: [], current: "00000001/00000200" } }))
    const slot = none.find((check) => check.name === "Change log orders (slot)")!
    expect(renderCheck(slot)).toBe("[OK]  Change log orders (slot): orders_slot does not exist yet (the first run creates it)")
    expect(checkJson(slot)).toMatchObject({ status: "ok", slot: null })
  })

  it("a change log the source cannot inspect is a failed check naming the export", async () => {
    const failing = changeLogSource({
      inspect: Effect.fail(new SourceError({ source: "changelog", message: "permission denied for pg_replication_slots", retryable: false }))
    })
    expect(linesOf(await doctorOn(failing))).toContain("[FAIL] Change log orders: permission denied for pg_replication_slots")
  })

  it("a cdc export on a source without change data capture is a failed check naming the export", async () => {
    const memory = memorySource({ schema: { columns: [{ name: "id", type: { kind: "int64" } }] }, rows: [] })
    const config = await configOf({ type: "memory" }, [{ name: "orders", table: "orders", mode: "cdc" }], [memory.plugin])
    const checks = await Effect.runPromise(doctor(config))
    expect(linesOf(checks)).toEqual([
      "[OK]  Source Memory",
      "[OK]  Export orders",
      "[FAIL] Change log orders: export 'orders'.mode: the Memory source cannot read a change log (mode: cdc)",
      "       Hint: use a source with change data capture (postgres, mysql), or another mode",
      "[OK]  Destination Memory"
    ])
  })
})
