import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readRows } from "../../formats/parquet/read-back.js"
import { adminConnection, noMysql } from "../../../support/mysql.js"
import { readManifest } from "../../../support/output.js"
import { TYPES_DDL } from "./fixtures.js"
import { failed, partsText, removeTempDirs, runMysql, succeeded, tempDir } from "./run.js"

const utcMicros = (iso: string, micros: number): bigint => BigInt(Date.parse(`${iso}Z`)) * 1000n + BigInt(micros)
const days = (iso: string): number => Date.parse(`${iso}T00:00:00Z`) / 86_400_000
const hex = (text: string) => Uint8Array.from(Buffer.from(text, "hex"))

describe.skipIf(noMysql())("mysql source: every type at its extremes", () => {
  beforeAll(async () => {
    const admin = await adminConnection()
    try {
      await admin.query(TYPES_DDL)
      await admin.query(`
        DROP TABLE IF EXISTS mt_zero, mt_geo;
        SET SESSION sql_mode = '';
        CREATE TABLE mt_zero (id int PRIMARY KEY, d date, at datetime(6));
        INSERT INTO mt_zero VALUES (1, '2024-01-10', '2024-01-10 10:00:00.5'), (2, '0000-00-00', '2024-01-10 10:00:00'),
          (3, '2024-01-10', '2024-00-10 10:00:00');
        CREATE TABLE mt_geo (id int PRIMARY KEY, g geometry);`)
    } finally {
      await admin.end()
    }
  })
  afterAll(async () => {
    const admin = await adminConnection()
    await admin.query("DROP TABLE IF EXISTS mt_types, mt_zero, mt_geo").finally(() => admin.end())
    removeTempDirs()
  })

  it("writes NDJSON, CSV and Parquet with every value exact", async () => {
    const dir = tempDir()
    const runs = await runMysql(dir, [
      { name: "n", table: "mt_types", format: "ndjson" },
      { name: "c", table: "mt_types", format: "csv" },
      { name: "p", table: "mt_types", format: "parquet" }
    ])
    for (const run of runs) expect(succeeded(run).rows).toBe(3)

    // The same rows the text formats write: integers, unsigned bigint as decimal(20,0), decimal(65,30), µs.
    const ndjson = partsText(path.join(dir, "out/n")).split("\n")
    expect(ndjson[0]).toBe(
      '{"id":1,"ti":127,"tiu":255,"b1":1,"si":32767,"siu":65535,"mi":8388607,"miu":16777215,"i":2147483647,' +
        '"iu":"4294967295","bi":"9223372036854775807","biu":"18446744073709551615",' +
        '"d":"99999999999999999999999999999999999.999999999999999999999999999999","du":"99999999.99",' +
        '"f":3.4028235e+38,"dbl":1.7976931348623157e+308,"bt":"ffffffffffffffff","ch":"héllo","vc":"😀 emoji",' +
        '"tx":"line\\nbreak, \\"quoted\\"","bn":"00010200","vb":"00","bl":"00ff","e":"bé","st":"x,z",' +
        '"dt":"9999-12-31","dtm":"9999-12-31T23:59:59.999999","dt0":"1000-01-01T00:00:00.000000",' +
        '"ts":"2038-01-19T03:14:07.999999Z","tm":"PT838H59M59S","y":2155,"j":{"big": 12345678901234567890.5, "s": "é"}}'
    )
    expect(ndjson[1]).toBe(
      '{"id":2,"ti":-128,"tiu":0,"b1":0,"si":-32768,"siu":0,"mi":-8388608,"miu":0,"i":-2147483648,"iu":"0",' +
        '"bi":"-9223372036854775808","biu":"0","d":"-99999999999999999999999999999999999.999999999999999999999999999999",' +
        '"du":"0.00","f":-1.1754944e-38,"dbl":-2.2250738585072014e-308,"bt":"0000000000000000","ch":"","vc":"","tx":"",' +
        '"bn":"00000000","vb":"","bl":"","e":"a","st":"","dt":"1000-01-01","dtm":"1000-01-01T00:00:00.000001",' +
        '"dt0":"2024-02-29T12:30:45.000000","ts":"1970-01-01T00:00:01.000000Z","tm":"-PT838H59M59S","y":1901,"j":[]}'
    )
    expect(JSON.parse(ndjson[2]!)).toEqual({ id: 3, ...Object.fromEntries(Object.keys(JSON.parse(ndjson[1]!)).slice(1).map((k) => [k, null])) })

    const csv = partsText(path.join(dir, "out/c")).split("\n")
    expect(csv[0]).toBe("id,ti,tiu,b1,si,siu,mi,miu,i,iu,bi,biu,d,du,f,dbl,bt,ch,vc,tx,bn,vb,bl,e,st,dt,dtm,dt0,ts,tm,y,j")
    expect(csv.slice(1, 3).join("\n")).toBe(
      "1,127,255,1,32767,65535,8388607,16777215,2147483647,4294967295,9223372036854775807,18446744073709551615," +
        "99999999999999999999999999999999999.999999999999999999999999999999,99999999.99,3.4028235e+38,1.7976931348623157e+308," +
        'ffffffffffffffff,héllo,😀 emoji,"line\nbreak, ""quoted""",00010200,00,00ff,bé,"x,z",9999-12-31,' +
        "9999-12-31T23:59:59.999999,1000-01-01T00:00:00.000000,2038-01-19T03:14:07.999999Z,PT838H59M59S,2155," +
        '"{""big"": 12345678901234567890.5, ""s"": ""é""}"'
    )
    expect(csv[4]).toBe("3" + ",".repeat(31))

    const manifest = readManifest(path.join(dir, "out/p"))
    const types = Object.fromEntries(manifest.schema.map((column: { name: string; type: string }) => [column.name, column.type]))
    expect(types).toMatchObject({
      ti: "int16", tiu: "int16", b1: "int16", siu: "int32", miu: "int32", iu: "int64", bi: "int64",
      biu: "decimal(20,0)", d: "decimal(65,30)", du: "decimal(10,2)", f: "float32", dbl: "float64", bt: "bytes",
      bn: "bytes", e: "string", st: "string", dt: "date", dtm: "timestamp", ts: "timestamptz", tm: "interval",
      y: "int16", j: "json"
    })
    const file = fs.readFileSync(path.join(dir, "out/p", manifest.parts[0]!.path))
    const rows = await readRows(file.buffer.slice(file.byteOffset, file.byteOffset + file.byteLength))
    expect(rows[0]).toMatchObject({
      biu: "18446744073709551615",
      bi: 9223372036854775807n,
      d: "99999999999999999999999999999999999.999999999999999999999999999999",
      f: 3.4028234663852886e38,
      bt: hex("ffffffffffffffff"),
      vc: "😀 emoji",
      bn: hex("00010200"),
      dt: days("9999-12-31"),
      dtm: utcMicros("9999-12-31T23:59:59", 999_999),
      ts: utcMicros("2038-01-19T03:14:07", 999_999),
      tm: "PT838H59M59S",
      j: '{"big": 12345678901234567890.5, "s": "é"}'
    })
    expect(rows[1]).toMatchObject({
      bi: -9223372036854775808n,
      f: Math.fround(-1.17549435e-38),
      dt: days("1000-01-01"),
      dtm: utcMicros("1000-01-01T00:00:00", 1),
      ts: utcMicros("1970-01-01T00:00:01", 0),
      tm: "-PT838H59M59S",
      vb: new Uint8Array(0)
    })
    expect(Object.entries(rows[2]!).filter(([name, value]) => name !== "id" && value !== null)).toEqual([])
  })

  it("refuses zero dates naming the column and the row's key, and exports them as NULL with zero_dates: null", async () => {
    const error = failed((await runMysql(tempDir(), [{ name: "z", table: "mt_zero" }]))[0])
    expect(error.message).toMatch(/column "d" \(date\) holds the zero date '0000-00-00' at row 2 \(id = 2\)/)
    expect("hint" in error ? error.hint : "").toMatch(/zero_dates: null/)

    const dir = tempDir()
    succeeded((await runMysql(dir, [{ name: "z", table: "mt_zero" }], { source: { zero_dates: "null" } }))[0])
    expect(partsText(path.join(dir, "out/z")).trim().split("\n")).toEqual([
      '{"id":1,"d":"2024-01-10","at":"2024-01-10T10:00:00.500000"}',
      '{"id":2,"d":null,"at":"2024-01-10T10:00:00.000000"}',
      '{"id":3,"d":"2024-01-10","at":null}'
    ])
  })

  it("refuses geometry with the cast to use, and takes the cast", async () => {
    const error = failed((await runMysql(tempDir(), [{ name: "g", table: "mt_geo" }]))[0])
    expect(error.message).toMatch(/g: geometry columns have no lossless logical type/)
    expect("hint" in error ? error.hint : "").toMatch(/ST_AsText\(`g`\)/)
    const dir = tempDir()
    const run = await runMysql(dir, [{ name: "g", query: "SELECT id, ST_AsText(g) AS g FROM mt_geo" }])
    expect(succeeded(run[0]).rows).toBe(0)
  })

  it("takes a columns: override of tinyint(1) to bool and refuses one that does not fit", async () => {
    const dir = tempDir()
    const run = await runMysql(dir, [{ name: "b", query: "SELECT id, b1 FROM mt_types ORDER BY id", columns: { b1: { type: "bool" } } }])
    succeeded(run[0])
    expect(partsText(path.join(dir, "out/b")).trim().split("\n")).toEqual(['{"id":1,"b1":true}', '{"id":2,"b1":false}', '{"id":3,"b1":null}'])
    const refused = failed((await runMysql(tempDir(), [{ name: "b", table: "mt_types", columns: { dt: { type: "bool" } } }]))[0])
    expect(refused.message).toMatch(/dt: the override bool does not fit MySQL type date/)
  })
})
