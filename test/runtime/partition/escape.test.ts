import { describe, expect, it } from "@effect/vitest"
import { escapePartitionValue, HIVE_DEFAULT_PARTITION, parsePartitionPath, partitionDirectory } from "../../../src/engine/partition/escape.js"

const bytes = (text: string) => [...new TextEncoder().encode(text)]

describe("partition value escaping (Hive's escapePathName)", () => {
  it("escapes exactly Hive's characters as %XX and keeps other bytes, non-ASCII included, as UTF-8", () => {
    expect(escapePartitionValue("a/b")).toBe("a%2Fb")
    expect(escapePartitionValue("x=y")).toBe("x%3Dy")
    expect(escapePartitionValue("100%")).toBe("100%25")
    expect(escapePartitionValue("c:d?e#f")).toBe("c%3Ad%3Fe%23f")
    expect(escapePartitionValue(`"'*\\{[]^\x7F`)).toBe("%22%27%2A%5C%7B%5B%5D%5E%7F")
    expect(escapePartitionValue("tab\there\nnew")).toBe("tab%09here%0Anew")
    expect(escapePartitionValue("\x01\x1F")).toBe("%01%1F")
    expect(escapePartitionValue("sp ace,+;~!@$&()")).toBe("sp ace,+;~!@$&()")
    // é stays as its two UTF-8 bytes, 日本 as three each, as Hive and Spark write them.
    expect(bytes(escapePartitionValue("é"))).toEqual([0xc3, 0xa9])
    expect(bytes(escapePartitionValue("日本"))).toEqual(bytes("日本"))
    expect(escapePartitionValue("%41")).toBe("%2541")
  })

  it("writes NULL and the empty string as the default partition", () => {
    expect(escapePartitionValue(null)).toBe(HIVE_DEFAULT_PARTITION)
    expect(escapePartitionValue("")).toBe(HIVE_DEFAULT_PARTITION)
    expect(partitionDirectory(["country", "m"], [null, "2024-05"])).toBe("country=__HIVE_DEFAULT_PARTITION__/m=2024-05/")
  })

  it("reads directories back to the values written", () => {
    for (const value of ["a/b", "x=y", "é", "100%", "%41", "c:d", "\t", "日本 x"]) {
      const path = `${partitionDirectory(["k", "n"], [value, null])}orders_20240101_000000_000_part0.csv`
      expect(parsePartitionPath(path)).toEqual([["k", value], ["n", null]])
    }
  })
})
