import postgres from "postgres"
import { afterAll, describe, expect, it } from "vitest"
import { keyText } from "../../src/core/key-text.js"
import { testPgUrl } from "../support/pg.js"

// Key and cursor values go back to PostgreSQL as filter parameters: each must read back as the value it came from,
// including years outside 1–9999, which the text formats write in the ISO 8601 expanded form PostgreSQL refuses.
const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
afterAll(() => sql.end())

const DATES = ["0044-03-15 BC", "0001-12-31 BC", "0001-01-01", "1969-12-31", "2026-12-02", "9999-12-31", "10000-01-01", "294276-12-31"]
const TIMESTAMPS = ["4713-01-01 00:00:00 BC", "0001-06-30 23:59:59.999999 BC", "1900-02-28 12:00:00.000001", "2026-12-02 10:11:12.131415", "12345-06-07 08:09:10.111213"]

describe("keyText values read back by PostgreSQL", () => {
  it("dates, BC and beyond 9999 included", async () => {
    for (const text of DATES) {
      const [row] = await sql<Array<{ days: number }>>`select ${text}::text::date - '1970-01-01'::date as days`
      const key = keyText({ kind: "date" }, row!.days)!
      const [check] = await sql<Array<{ same: boolean }>>`select ${key}::text::date = ${text}::text::date as same`
      expect({ text, key, same: check!.same }).toEqual({ text, key, same: true })
    }
  })

  it("timestamps and timestamptz with microseconds, BC and beyond 9999 included", async () => {
    for (const text of TIMESTAMPS) {
      const [row] = await sql<Array<{ micros: string }>>`select (extract(epoch from ${text}::text::timestamp) * 1000000)::int8::text as micros`
      for (const kind of ["timestamp", "timestamptz"] as const) {
        const key = keyText({ kind }, BigInt(row!.micros))!
        const [check] = await sql<Array<{ same: boolean }>>`
          select ${key}::text::timestamptz at time zone 'UTC' = ${text}::text::timestamp and ${key}::text::timestamp = ${text}::text::timestamp as same`
        expect({ kind, text, key, same: check!.same }).toEqual({ kind, text, key, same: true })
      }
    }
  })
})
