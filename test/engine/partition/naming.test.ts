import { describe, expect, it } from "@effect/vitest"
import { decodePartitionName, escapePartitionValue } from "../../../src/engine/partition/escape.js"
import { BOUNDED_MARKER, nameBudget, nameMismatch, partitionDirectoryOf, partitionName, valueHash } from "../../../src/engine/partition/naming.js"

const byteLength = (text: string) => new TextEncoder().encode(text).length

describe("bounded partition directory names", () => {
  it("keeps a directory within 255 bytes and all of a part's directories within 768", () => {
    expect(nameBudget("k", 1)).toBe(253)
    expect(nameBudget("country", 3)).toBe(255 - 8)
    expect(nameBudget("country", 4)).toBe(191 - 8)
    // Many or long keys: never less than 40 bytes for the name.
    expect(nameBudget("a_rather_long_partition_column_name_of_sixty_characters_xxxx", 12)).toBe(40)
    for (const keyCount of [1, 2, 3, 4, 6]) {
      const keys = Array.from({ length: keyCount }, (_, i) => `column_${i}`)
      const values = keys.map(() => "/".repeat(400))
      const dir = partitionDirectoryOf({ keys, textual: keys.map(() => true) })(values)
      expect(byteLength(dir)).toBeLessThanOrEqual(768)
      for (const segment of dir.split("/").slice(0, -1)) expect(byteLength(segment)).toBeLessThanOrEqual(255)
    }
  })

  it("names a value too long for its budget by a start of its escaped text, %7E and its hash", () => {
    const long = "L".repeat(300)
    const name = partitionName(long, false, 253)
    expect(byteLength(name)).toBeLessThanOrEqual(253)
    expect(name).toBe(`${"L".repeat(253 - 23)}${BOUNDED_MARKER}${valueHash(long)}`)
    expect(valueHash(long)).toMatch(/^[0-9a-f]{20}$/)
    // Cut between whole %XX escapes and whole characters, never inside one.
    for (const value of ["/".repeat(90), "日".repeat(100), "é/".repeat(90), "🙂".repeat(80), "É".repeat(60), "cafe\u0301".repeat(60)]) {
      for (const textual of [false, true]) {
        const bounded = partitionName(value, textual, 100)
        expect(byteLength(bounded)).toBeLessThanOrEqual(100)
        const prefix = bounded.slice(0, bounded.lastIndexOf(BOUNDED_MARKER))
        expect(value.startsWith(decodePartitionName(prefix)!)).toBe(true)
        expect(byteLength(prefix)).toBeGreaterThan(100 - 23 - 12)
        expect(nameMismatch(bounded, value)).toBeUndefined()
      }
    }
    // A value that fits keeps its plain escaped name; one byte over gets a bounded one.
    expect(partitionName("x".repeat(253), false, 253)).toBe("x".repeat(253))
    expect(partitionName("x".repeat(254), false, 253)).toContain(BOUNDED_MARKER)
  })

  it("never gives two values one name: bounded names carry a marker escaping never writes", () => {
    const long = "L".repeat(300)
    const other = `${"L".repeat(299)}M`
    expect(partitionName(long, false, 253)).not.toBe(partitionName(other, false, 253))
    // The value that reads as the bounded name (`~` and the hash) is named with a raw `~`.
    const lookalike = decodePartitionName(partitionName(long, false, 253))!
    expect(escapePartitionValue(lookalike)).not.toBe(partitionName(long, false, 253))
    for (const value of ["~", "a~b", "%7E", "%7e"]) {
      expect(escapePartitionValue(value)).not.toContain(BOUNDED_MARKER)
      expect(escapePartitionValue(value, true)).not.toContain(BOUNDED_MARKER)
    }
    // Case variants of a long value: different hashes and prefixes that differ case-insensitively.
    const upper = partitionName("ABC".repeat(100), true, 200)
    const lower = partitionName("abc".repeat(100), true, 200)
    expect(upper.toLowerCase()).not.toBe(lower.toLowerCase())
  })

  it("checks a recorded value against its directory's name", () => {
    const long = "/".repeat(90)
    const bounded = partitionName(long, true, 100)
    expect(nameMismatch(bounded, long)).toBeUndefined()
    expect(nameMismatch(bounded, "/".repeat(89))).toBe("ends with another value's hash")
    expect(nameMismatch(bounded, null)).toBe("is a bounded name, which no NULL has")
    expect(nameMismatch("a%2Fb", "a/b")).toBeUndefined()
    expect(nameMismatch("%41bc", "Abc")).toBeUndefined()
    expect(nameMismatch("%41bc", "abc")).toBe('reads "Abc"')
    expect(nameMismatch("__HIVE_DEFAULT_PARTITION__", null)).toBeUndefined()
    expect(nameMismatch("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__")).toBe("reads NULL")
    expect(nameMismatch("%5F_HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__")).toBeUndefined()
  })
})
