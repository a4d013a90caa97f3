import { describe, expect, it } from "vitest"
import { type BatchSchema, batchFromColumns, batchToRows, type Column, type ColumnData, makeBatch } from "../../../../../src/core/batch.js"
import { ChangeColumnsBuilder } from "../../../../../src/core/columns/change-columns.js"
import { CHANGE_COLUMNS, changeSchema, snapshotChangeColumns } from "../../../../../src/plugins/sources/postgres/cdc/change-columns.js"
import { positionText, writePositionText } from "../../../../../src/plugins/sources/postgres/cdc/positions.js"

// The change metadata columns: their schema, the snapshot's columns, and the builder the decoder writes them with.
const TABLE: ReadonlyArray<Column> = [
  { name: "id", type: { kind: "int64" }, sourceType: "int8" },
  { name: "note", type: { kind: "string" }, sourceType: "text" }
]
const CHANGE_SCHEMA: BatchSchema = { columns: CHANGE_COLUMNS }
const LSN = 0x16_b374d848

const positionBytes = (lsn: number): Uint8Array => {
  const bytes = new Uint8Array(17)
  writePositionText(bytes, 0, lsn)
  return bytes
}

describe("CHANGE_COLUMNS", () => {
  it("are __op, __pos, __seq, __commit_ts, __txid, __unchanged, each with its type and a PostgreSQL source type", () => {
    expect(CHANGE_COLUMNS).toEqual([
      { name: "__op", type: { kind: "string" }, sourceType: "text" },
      { name: "__pos", type: { kind: "string" }, sourceType: "pg_lsn" },
      { name: "__seq", type: { kind: "int64" }, sourceType: "int8" },
      { name: "__commit_ts", type: { kind: "timestamptz" }, sourceType: "timestamptz" },
      { name: "__txid", type: { kind: "int64" }, sourceType: "xid" },
      { name: "__unchanged", type: { kind: "list", element: { kind: "string" } }, sourceType: "text[]" }
    ])
  })
})

describe("changeSchema", () => {
  it("puts the change columns before the table's", () => {
    expect(changeSchema(TABLE)).toEqual({ schema: { columns: [...CHANGE_COLUMNS, ...TABLE] } })
    expect(changeSchema([])).toEqual({ schema: { columns: CHANGE_COLUMNS } })
  })

  it("a table column named like a change column is a problem to report, with the fix", () => {
    const result = changeSchema([...TABLE, { name: "__seq", type: { kind: "int32" } }])
    expect("problem" in result && result.problem.reason).toBe(
      'column "__seq" has the name of a change column (__op, __pos, __seq, __commit_ts, __txid, __unchanged)'
    )
    expect("problem" in result && result.problem.fix).toMatch(/RENAME COLUMN "__seq"/)
    // Names are case-sensitive, as in PostgreSQL and Parquet.
    expect("schema" in changeSchema([{ name: "__OP", type: { kind: "string" } }])).toBe(true)
  })
})

describe("snapshotChangeColumns", () => {
  it("gives rows × (snapshot, the consistent point, seq from firstSeq, null, null, null)", () => {
    const columns = snapshotChangeColumns(3, LSN, 10_000)
    expect(columns.map((column) => column.length)).toEqual([3, 3, 3, 3, 3, 3])
    const snapshot = { __op: "snapshot", __pos: "00000016/B374D848", __commit_ts: null, __txid: null, __unchanged: null }
    expect(batchToRows(batchFromColumns(CHANGE_SCHEMA, columns))).toEqual([
      { ...snapshot, __seq: 10_000n },
      { ...snapshot, __seq: 10_001n },
      { ...snapshot, __seq: 10_002n }
    ])
  })

  it("goes in front of a batch the COPY path read, as the change schema says", () => {
    const read = makeBatch({ columns: TABLE }, [[1n, 2n], ["a", null]])
    const result = changeSchema(TABLE)
    if (!("schema" in result)) throw new Error("no schema")
    const batch = batchFromColumns(result.schema, [...snapshotChangeColumns(read.rowCount, 0, 0), ...read.columns])
    expect(batch.rowCount).toBe(2)
    expect(batchToRows(batch)).toEqual([
      { __op: "snapshot", __pos: "00000000/00000000", __seq: 0n, __commit_ts: null, __txid: null, __unchanged: null, id: 1n, note: "a" },
      { __op: "snapshot", __pos: "00000000/00000000", __seq: 1n, __commit_ts: null, __txid: null, __unchanged: null, id: 2n, note: null }
    ])
  })

  it("of no rows: six empty columns", () => {
    expect(snapshotChangeColumns(0, LSN, 5).map((column) => column.length)).toEqual([0, 0, 0, 0, 0, 0])
  })
})

describe("ChangeColumnsBuilder", () => {
  it("writes change rows, __unchanged naming the columns added before each row, and starts again after reset", () => {
    const builder = new ChangeColumnsBuilder(2, 17)
    const utf8 = (text: string) => new TextEncoder().encode(text)
    const position = positionBytes(LSN)
    const commit = 1_706_067_200_123_456 // 2024-01-24T03:33:20.123456Z
    builder.appendChange("insert", position, 0, commit, 4_294_967_295)
    builder.addUnchanged(utf8("big"))
    builder.addUnchanged(utf8("blöb"))
    builder.appendChange("update", position, 1, commit, 7)
    builder.appendChange("delete", position, 2 ** 32 + 5, commit, 7)
    const first: Array<ColumnData> = []
    builder.finishInto(first)
    const change = { __pos: positionText(LSN), __commit_ts: 1_706_067_200_123_456n }
    expect(batchToRows(batchFromColumns(CHANGE_SCHEMA, first))).toEqual([
      { ...change, __op: "insert", __seq: 0n, __txid: 4_294_967_295n, __unchanged: null },
      { ...change, __op: "update", __seq: 1n, __txid: 7n, __unchanged: ["big", "blöb"] },
      { ...change, __op: "delete", __seq: 4_294_967_301n, __txid: 7n, __unchanged: null }
    ])

    builder.reset()
    builder.addUnchanged(utf8("x"))
    builder.appendChange("update", positionBytes(1), 0, -1, 1)
    builder.appendSnapshot(positionBytes(2), 3)
    const second: Array<ColumnData> = []
    builder.finishInto(second)
    expect(batchToRows(batchFromColumns(CHANGE_SCHEMA, second))).toEqual([
      { __op: "update", __pos: "00000000/00000001", __seq: 0n, __commit_ts: -1n, __txid: 1n, __unchanged: ["x"] },
      { __op: "snapshot", __pos: "00000000/00000002", __seq: 3n, __commit_ts: null, __txid: null, __unchanged: null }
    ])
    // The first batch's columns are its own: the reset builders wrote elsewhere.
    expect(batchToRows(batchFromColumns(CHANGE_SCHEMA, first))[1]!.__unchanged).toEqual(["big", "blöb"])
  })
})
