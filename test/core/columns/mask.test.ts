import { createHash, createHmac } from "node:crypto"
import { describe, expect, it } from "vitest"
import { makeBatch, valueAt } from "../../../src/core/batch.js"
import { maskColumn, maskedType, maskProblem } from "../../../src/core/columns/mask.js"
import type { LogicalType } from "../../../src/core/columns/logical.js"

// Masks over column buffers, checked against node:crypto computed here value by value.

const key = new TextEncoder().encode("a key of at least sixteen bytes")
const column = (type: LogicalType, values: ReadonlyArray<unknown>) =>
  makeBatch({ columns: [{ name: "c", type }] }, [values as never]).columns[0]!
const texts = (data: ReturnType<typeof maskColumn>, type: LogicalType) => Array.from({ length: data.length }, (_, row) => valueAt(data, type, row))

describe("column masks", () => {
  it("hmac_sha256 and hash_sha256: lowercase hex of the value's UTF-8 bytes; NULL stays NULL", () => {
    const values = ["alice@example.com", null, "Zoë ✓", ""]
    const data = column({ kind: "string" }, values)
    const hmac = (text: string) => createHmac("sha256", key).update(text, "utf8").digest("hex")
    expect(texts(maskColumn(data, { kind: "string" }, "hmac_sha256", key), { kind: "string" })).toEqual(values.map((v) => (v === null ? null : hmac(v))))
    const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")
    expect(texts(maskColumn(data, { kind: "string" }, "hash_sha256", key), { kind: "string" })).toEqual(values.map((v) => (v === null ? null : sha(v))))
  })

  it("hmac_sha256 equals RFC 2104 HMAC for long keys (hashed first) and long values (past the scratch buffer)", () => {
    const longKey = new TextEncoder().encode("k".repeat(100))
    const values = ["x".repeat(1000), "short", "y".repeat(257)]
    const data = maskColumn(column({ kind: "string" }, values), { kind: "string" }, "hmac_sha256", longKey)
    expect(texts(data, { kind: "string" })).toEqual(values.map((v) => createHmac("sha256", longKey).update(v).digest("hex")))
  })

  it("other types are digested as their text: integers, timestamps; the masked type is text", () => {
    const ints = column({ kind: "int64" }, [42n, null, -7n])
    const hmac = (text: string) => createHmac("sha256", key).update(text).digest("hex")
    expect(texts(maskColumn(ints, { kind: "int64" }, "hmac_sha256", key), { kind: "string" })).toEqual([hmac("42"), null, hmac("-7")])
    expect(maskedType("hmac_sha256", { kind: "int64" })).toEqual({ kind: "string" })
    expect(maskedType("redact", { kind: "int64" })).toEqual({ kind: "int64" })
  })

  it("last4 keeps the last four characters (code points) and the length; four or fewer are all starred", () => {
    const values = ["4111111111111111", "ab", "12345", "Zoë-✓✓✓✓", null]
    const data = maskColumn(column({ kind: "string" }, values), { kind: "string" }, "last4", key)
    expect(texts(data, { kind: "string" })).toEqual(["************1111", "**", "*2345", "****✓✓✓✓", null])
    expect(maskProblem("last4", { kind: "int32" })).toContain("last four characters of text")
  })

  it("redact: every value NULL, the type kept", () => {
    const data = maskColumn(column({ kind: "int32" }, [1, 2, null]), { kind: "int32" }, "redact", key)
    expect(texts(data, { kind: "int32" })).toEqual([null, null, null])
    expect(data.nullCount).toBe(3)
  })
})
