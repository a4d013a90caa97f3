import { describe, expect, it } from "vitest"
import {
  formatLsn,
  lsnAt,
  parseLsn,
  POSITION_TEXT_BYTES,
  positionText,
  writePositionText
} from "../../../../../src/plugins/sources/postgres/cdc/positions.js"

// LSNs as numbers: read from the wire, spelled as PostgreSQL does and as Rivet stores them, parsed back.
const LSN = 0x16_b374d848 // 16/B374D848
const MAX_EXACT = 2 ** 53 - 1 // 1FFFFF/FFFFFFFF

describe("lsnAt", () => {
  it("reads a big-endian uint64 at an offset", () => {
    const b = new Uint8Array([0xaa, 0x00, 0x00, 0x00, 0x16, 0xb3, 0x74, 0xd8, 0x48, 0xbb])
    expect(lsnAt(b, 1)).toBe(LSN)
    expect(lsnAt(new Uint8Array(8), 0)).toBe(0)
    expect(lsnAt(new Uint8Array([0x00, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), 0)).toBe(MAX_EXACT)
    // Both words unsigned: a high word with its top bit set is no negative number.
    expect(lsnAt(new Uint8Array([0x80, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]), 0)).toBe(2 ** 63 + 0xffffffff)
  })
})

describe("formatLsn", () => {
  it("spells an LSN as PostgreSQL does: upper-case hex, no padding", () => {
    expect(formatLsn(LSN)).toBe("16/B374D848")
    expect(formatLsn(0)).toBe("0/0")
    expect(formatLsn(0x1_0000000a)).toBe("1/A")
    expect(formatLsn(MAX_EXACT)).toBe("1FFFFF/FFFFFFFF")
  })
})

describe("positionText", () => {
  it("zero-pads both words to 8 hex digits", () => {
    expect(positionText(LSN)).toBe("00000016/B374D848")
    expect(positionText(0)).toBe("00000000/00000000")
    expect(positionText(0x1_0000000a)).toBe("00000001/0000000A")
    expect(positionText(MAX_EXACT)).toBe("001FFFFF/FFFFFFFF")
  })

  it("sorts as text in WAL order", () => {
    const lsns = [0, 9, 10, 0xf, 0x10, 0xffffffff, 2 ** 32, 0xa_00000000, 0x10_00000000, 0x16_b374d848, MAX_EXACT]
    const texts = lsns.map(positionText)
    expect([...texts].sort()).toEqual(texts)
    // Unpadded, PostgreSQL's own spelling does not: "A/0" sorts after "10/0".
    expect([formatLsn(0xa_00000000), formatLsn(0x10_00000000)].sort()).toEqual(["10/0", "A/0"])
  })

  it("writePositionText writes the same 17 ASCII bytes, in place", () => {
    const target = new Uint8Array(POSITION_TEXT_BYTES + 4).fill(0x2a)
    for (const lsn of [0, LSN, 0xffffffff, 2 ** 32, MAX_EXACT]) {
      writePositionText(target, 2, lsn)
      expect(new TextDecoder().decode(target.subarray(2, 2 + POSITION_TEXT_BYTES))).toBe(positionText(lsn))
      expect([target[0], target[1], target[19], target[20]]).toEqual([0x2a, 0x2a, 0x2a, 0x2a])
    }
  })
})

describe("parseLsn", () => {
  it("reads both spellings, any case, 1 to 8 hex digits a side", () => {
    expect(parseLsn("16/B374D848")).toBe(LSN)
    expect(parseLsn("00000016/B374D848")).toBe(LSN)
    expect(parseLsn("16/b374d848")).toBe(LSN)
    expect(parseLsn("0/0")).toBe(0)
    expect(parseLsn("1/A")).toBe(0x1_0000000a)
    expect(parseLsn("1FFFFF/FFFFFFFF")).toBe(MAX_EXACT)
  })

  it("round-trips formatLsn and positionText", () => {
    for (const lsn of [0, 1, 0xffffffff, 2 ** 32, LSN, 0x1bcdef_12345678, MAX_EXACT]) {
      expect(parseLsn(formatLsn(lsn))).toBe(lsn)
      expect(parseLsn(positionText(lsn))).toBe(lsn)
    }
  })

  it("is undefined for anything else, and for LSNs a number cannot hold exactly (2^53 and beyond)", () => {
    const bad = ["", "16", "16/", "/B374D848", "123456789/0", "0/123456789", "G/0", "16 /B374D848", " 16/B374D848", "16/B374D848 ",
      "1/2/3", "-1/0", "+1/0", "0x16/B374D848", "16-B374D848", "200000/0", "FFFFFFFF/FFFFFFFF"]
    for (const text of bad) expect(parseLsn(text), JSON.stringify(text)).toBeUndefined()
  })
})
