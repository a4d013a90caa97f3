import { describe, expect, it } from "vitest"
import { comparePositions, parsePosition, positionText } from "../../../../../src/plugins/sources/mysql/cdc/position.js"

describe("binary log positions", () => {
  it("are spelled with a zero-padded offset and an optional GTID, and read back", () => {
    expect(positionText({ file: "binlog.000042", offset: 1234 })).toBe("binlog.000042:000000001234")
    expect(positionText({ file: "mysql-bin.000001", offset: 4, gtid: "0-1-57" })).toBe("mysql-bin.000001:000000000004@0-1-57")
    expect(parsePosition("binlog.000042:000000001234@0-1-57")).toEqual({ file: "binlog.000042", offset: 1234, gtid: "0-1-57" })
    expect(parsePosition("binlog.000042:000000001234")).toEqual({ file: "binlog.000042", offset: 1234, gtid: undefined })
  })

  it("refuses what is not one: a PostgreSQL LSN, a cursor value, an offset beyond 2^53", () => {
    expect(parsePosition("00000016/B374D848")).toBeUndefined()
    expect(parsePosition("2024-01-01 00:00:00")).toBeUndefined()
    expect(parsePosition("binlog.000001:99999999999999999999")).toBeUndefined()
    expect(parsePosition("")).toBeUndefined()
  })

  it("order as the log: by the file's number, then the offset; text order agrees within fixed-width file names", () => {
    const positions = [
      { file: "binlog.000002", offset: 4 },
      { file: "binlog.000001", offset: 900 },
      { file: "binlog.000001", offset: 1200 },
      { file: "binlog.000010", offset: 4 }
    ]
    const sorted = [...positions].sort(comparePositions)
    expect(sorted.map(positionText)).toEqual([
      "binlog.000001:000000000900",
      "binlog.000001:000000001200",
      "binlog.000002:000000000004",
      "binlog.000010:000000000004"
    ])
    expect([...sorted.map(positionText)].sort()).toEqual(sorted.map(positionText))
  })
})
