import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExports } from "../../src/api.js"
import { readRows } from "../plugins/formats/parquet/read-back.js"
import { ALL_TYPES_TEXT, allTypesSetup } from "../support/all-types.js"
import { testPgUrl } from "../support/pg.js"

const TABLE = "e2e_all_types"
const TEXT = ALL_TYPES_TEXT

const setup = async (url: string) => {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql.unsafe(allTypesSetup(TABLE, "e2e_mood"))
  await sql.end()
}

const exportAs = async (format: "parquet" | "csv" | "ndjson") => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rivet-e2e-${format}-`))
  const [result] = await runExports({
    source: { type: "postgres", url: testPgUrl() },
    exports: [{ name: "all_types", query: `SELECT * FROM ${TABLE} ORDER BY id`, format, destination: { type: "local", path: dir } }]
  })
  expect(result?.parts).toHaveLength(1)
  return fs.readFileSync(path.join(dir, result!.parts[0]!.path))
}

describe("every PostgreSQL type round-trips exactly", () => {
  beforeAll(() => setup(testPgUrl()))
  afterAll(async () => {
    const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}; DROP TYPE IF EXISTS e2e_mood;`)
    await sql.end()
  })

  it("Parquet", async () => {
    const file = await exportAs("parquet")
    const rows = await readRows(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength))
    expect(rows).toHaveLength(3)
    const [full, empty, edge] = rows as Array<Record<string, unknown>>
    expect(full).toMatchObject({
      id: 1,
      i2: -32768,
      i8: -9223372036854775808n,
      f4: 1.5,
      f8: -0.1,
      num: "1234567890123456789012345678.0123456789",
      t: TEXT,
      ch: "xy ",
      b: true,
      d: -165,
      tm: 86399999999n,
      ts: -2208988799999999n,
      tstz: 1709210096123456n,
      j: '{"a": 12345678901234567890}',
      jb: '{"big": 12345678901234567890}',
      iv: "P1Y2M3DT4H5M6.5S",
      e: "sad",
      arr_i: [1, null, 3],
      arr_t: ["a,b", 'c"d', null]
    })
    expect(String(full!["u"]).toLowerCase().replaceAll("-", "")).toBe("a0eebc999c0b4ef8bb6d6bb9bd380a11")
    expect([...(full!["by"] as Uint8Array)]).toEqual([0, 255, 16])
    for (const [key, value] of Object.entries(empty!)) if (key !== "id") expect(value, key).toBeNull()
    expect(edge).toMatchObject({ i8: 9223372036854775807n, num: "-0.0000000001", t: "", b: false, arr_i: [], arr_t: [""] })
    expect(Number.isNaN(edge!["f4"])).toBe(true)
    expect(edge!["f8"]).toBe(-Infinity)
  })

  it("CSV", async () => {
    const text = (await exportAs("csv")).toString("utf8")
    const header = "id,i2,i8,f4,f8,num,t,ch,b,d,tm,ts,tstz,u,j,jb,by,iv,e,arr_i,arr_t"
    const row1 = [
      "1,-32768,-9223372036854775808,1.5,-0.1,1234567890123456789012345678.0123456789",
      `"unicode ✓ ""quotes"", comma\nnewline"`,
      "xy ,true,1969-07-20,23:59:59.999999,1900-01-01T00:00:00.000001,2024-02-29T12:34:56.123456Z",
      "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
      `"{""a"": 12345678901234567890}","{""big"": 12345678901234567890}"`,
      "00ff10,P1Y2M3DT4H5M6.5S,sad",
      `"[1,null,3]","[""a,b"",""c\\""d"",null]"`
    ].join(",")
    const row2 = `2${",".repeat(20)}`
    expect(text.startsWith(`${header}\n${row1}\n${row2}\n`)).toBe(true)
    const row3 = text.slice(`${header}\n${row1}\n${row2}\n`.length)
    expect(row3).toContain(`3,0,9223372036854775807,NaN,-Infinity,-0.0000000001,"",abc,false,2262-04-11,00:00:00.000000`)
    expect(row3).toContain(`1970-01-01T00:00:00.000000Z,00000000-0000-0000-0000-000000000000,[],null,"",P-1D,ok,[],"[""""]"\n`)
  })

  it("NDJSON", async () => {
    const lines = (await exportAs("ndjson")).toString("utf8").split("\n")
    expect(lines).toHaveLength(4)
    expect(lines[3]).toBe("")
    expect(lines[0]).toContain('"j":{"a": 12345678901234567890}')
    expect(lines[0]).toContain('"jb":{"big": 12345678901234567890}')
    const full = JSON.parse(lines[0]!) as Record<string, unknown>
    expect(full).toMatchObject({
      id: 1,
      i2: -32768,
      i8: "-9223372036854775808",
      f4: 1.5,
      f8: -0.1,
      num: "1234567890123456789012345678.0123456789",
      t: TEXT,
      ch: "xy ",
      b: true,
      d: "1969-07-20",
      tm: "23:59:59.999999",
      ts: "1900-01-01T00:00:00.000001",
      tstz: "2024-02-29T12:34:56.123456Z",
      u: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
      by: "00ff10",
      iv: "P1Y2M3DT4H5M6.5S",
      e: "sad",
      arr_i: [1, null, 3],
      arr_t: ["a,b", 'c"d', null]
    })
    const empty = JSON.parse(lines[1]!) as Record<string, unknown>
    expect(Object.values(empty).filter((value) => value !== null)).toEqual([2])
    expect(JSON.parse(lines[2]!)).toMatchObject({ f4: "NaN", f8: "-Infinity", t: "", jb: null, iv: "P-1D" })
  })
})
