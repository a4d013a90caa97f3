import { describe, expect, it } from "@effect/vitest"
import { invalidKeyReason, validateKey } from "../../../../src/plugins/sinks/s3/keys.js"

describe("S3 object keys", () => {
  it.each(["orders_20260406_120000_123.parquet", "a/b/c.csv", ".rivet_doctor_probe", "manifest.json"])(
    "accepts %j",
    (key) => {
      expect(invalidKeyReason(key, "exports/daily/")).toBeUndefined()
    }
  )

  it.each(["", "/abs.csv", "../up.csv", "a/../../b.csv", "a\\b.csv", "a//b.csv", "./a.csv", "a\0b"])(
    "refuses %j",
    (key) => {
      expect(invalidKeyReason(key, "exports/")).toBeDefined()
    }
  )

  it("enforces S3's 1024-byte key limit including the prefix", () => {
    expect(invalidKeyReason("k".repeat(1000), "p".repeat(24))).toBeUndefined()
    expect(invalidKeyReason("k".repeat(1000), "p".repeat(25))).toMatch(/1024-byte limit/)
    expect(invalidKeyReason("é".repeat(512), "")).toBeUndefined()
    expect(invalidKeyReason("é".repeat(513), "")).toMatch(/1024-byte limit/)
  })

  it("names the operation and the full key in the error", () => {
    const error = validateKey("PutObject", "my-data-bucket", "exports/", "../x.csv")
    expect(error?.message).toBe(
      'S3 PutObject s3://my-data-bucket/exports/../x.csv: invalid key "../x.csv": the key contains a `..` segment'
    )
    expect(error?.retryable).toBe(false)
  })
})
