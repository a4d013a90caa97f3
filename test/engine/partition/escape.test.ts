import { describe, expect, it } from "@effect/vitest"
import { escapePartitionValue, HIVE_DEFAULT_PARTITION, parsePartitionPath } from "../../../src/engine/partition/escape.js"
import { partitionDirectoryOf } from "../../../src/engine/partition/naming.js"

const bytes = (text: string) => [...new TextEncoder().encode(text)]
const directory = (keys: ReadonlyArray<string>, values: ReadonlyArray<string | null>, textual = keys.map(() => false)) =>
  partitionDirectoryOf({ keys, textual })(values)

// What a case-insensitive, normalisation-insensitive file system (APFS, NTFS with its upcase table) compares.
const folded = (name: string) => name.normalize("NFD").toUpperCase().toLowerCase()

describe("partition value escaping (Hive's escapePathName)", () => {
  it("escapes exactly Hive's characters as %XX and keeps other bytes, non-ASCII included, as UTF-8", () => {
    expect(escapePartitionValue("a/b")).toBe("a%2Fb")
    expect(escapePartitionValue("x=y")).toBe("x%3Dy")
    expect(escapePartitionValue("100%")).toBe("100%25")
    expect(escapePartitionValue("c:d?e#f")).toBe("c%3Ad%3Fe%23f")
    expect(escapePartitionValue(`"'*\\{[]^\x7F`)).toBe("%22%27%2A%5C%7B%5B%5D%5E%7F")
    expect(escapePartitionValue("tab\there\nnew")).toBe("tab%09here%0Anew")
    expect(escapePartitionValue("\x01\x1F\0")).toBe("%01%1F%00")
    expect(escapePartitionValue("sp ace,+;~!@$&()")).toBe("sp ace,+;~!@$&()")
    // é stays as its two UTF-8 bytes, 日本 as three each, as Hive and Spark write them.
    expect(bytes(escapePartitionValue("é"))).toEqual([0xc3, 0xa9])
    expect(bytes(escapePartitionValue("日本"))).toEqual(bytes("日本"))
    expect(escapePartitionValue("%41")).toBe("%2541")
    // Not a text column: rendered by Rivet in one case, so its uppercase letters stay.
    expect(escapePartitionValue("2024-05-17T13")).toBe("2024-05-17T13")
  })

  it("writes NULL and the empty string as the default partition, and the literal text apart from it", () => {
    expect(escapePartitionValue(null)).toBe(HIVE_DEFAULT_PARTITION)
    expect(escapePartitionValue("")).toBe(HIVE_DEFAULT_PARTITION)
    expect(escapePartitionValue(HIVE_DEFAULT_PARTITION)).toBe("%5F_HIVE_DEFAULT_PARTITION__")
    expect(escapePartitionValue(HIVE_DEFAULT_PARTITION, true)).not.toBe(HIVE_DEFAULT_PARTITION)
    expect(directory(["country", "m"], [null, "2024-05"])).toBe("country=__HIVE_DEFAULT_PARTITION__/m=2024-05/")
    expect(parsePartitionPath(`${directory(["k"], [HIVE_DEFAULT_PARTITION])}p.csv`)).toEqual([["k", HIVE_DEFAULT_PARTITION]])
    expect(parsePartitionPath(`${directory(["k"], [HIVE_DEFAULT_PARTITION], [true])}p.csv`)).toEqual([["k", HIVE_DEFAULT_PARTITION]])
    expect(parsePartitionPath(`${directory(["k"], [null])}p.csv`)).toEqual([["k", null]])
  })

  it("names text values fold-safe: case and normalisation variants get names no file system takes as one", () => {
    expect(escapePartitionValue("Abc", true)).toBe("%41bc")
    expect(escapePartitionValue("abc", true)).toBe("abc")
    expect(escapePartitionValue("FR", true)).toBe("%46%52")
    // NFC é stays as UTF-8; NFD e + U+0301 is not in NFC, so its non-ASCII characters are escaped.
    expect(escapePartitionValue("caf\u00e9", true)).toBe("caf\u00e9")
    expect(escapePartitionValue("cafe\u0301", true)).toBe("cafe%CC%81")
    // Uppercase non-ASCII, and lowercase letters another folds onto (ß → SS, final sigma → Σ → σ).
    expect(escapePartitionValue("É", true)).toBe("%C3%89")
    expect(escapePartitionValue("ß", true)).toBe("%C3%9F")
    expect(escapePartitionValue("ς", true)).toBe("%CF%82")
    expect(escapePartitionValue("σ日本", true)).toBe("σ日本")
    const variants = ["Abc", "abc", "ABC", "aBc", "caf\u00e9", "cafe\u0301", "CAF\u00c9", "Cafe\u0301", "ss", "ß", "SS", "σ", "ς", "Σ", "\u212a", "k", "K", "\u00c5", "\u212b", "å"]
    const names = variants.map((value) => escapePartitionValue(value, true))
    expect(new Set(names.map(folded)).size).toBe(variants.length)
  })

  it("reads directories back to the values written, fold-safe or not", () => {
    for (const value of ["a/b", "x=y", "é", "100%", "%41", "c:d", "\t", "日本 x", "Abc", "cafe\u0301", "ß", "ÉTÉ", "🙂 Ok"]) {
      for (const textual of [false, true]) {
        const path = `${directory(["k", "n"], [value, null], [textual, textual])}orders_20240101_000000_000_part0.csv`
        expect(parsePartitionPath(path)).toEqual([["k", value], ["n", null]])
      }
    }
  })
})
