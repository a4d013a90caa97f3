import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as JSONSchema from "effect/JSONSchema"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { DEFAULT_PART_SIZE, DEFAULT_REQUEST_TIMEOUT_MS, normalizePrefix, S3Config } from "../../../../src/plugins/sinks/s3/config.js"

const decode = Schema.decodeUnknownEither(S3Config, { onExcessProperty: "error", errors: "all" })

const base = { bucket: "rivet-exports", region: "us-east-1" }

const ok = (input: Record<string, unknown>) => {
  const result = decode({ ...base, ...input })
  if (Either.isLeft(result)) throw new Error(ParseResult.TreeFormatter.formatErrorSync(result.left))
  return result.right
}

/** The issues of a failed decode, as `path: message` lines. */
const issues = (input: Record<string, unknown>): Array<string> => {
  const result = decode(input)
  if (Either.isRight(result)) throw new Error(`expected a decode error for ${JSON.stringify(input)}`)
  return ParseResult.ArrayFormatter.formatErrorSync(result.left).map(
    (issue) => `${issue.path.join(".")}: ${issue.message}`
  )
}

describe("S3Config", () => {
  it("decodes the seed's minimal block with defaults", () => {
    expect(ok({})).toEqual({ ...base, part_size: DEFAULT_PART_SIZE, upload_concurrency: 4, request_timeout: DEFAULT_REQUEST_TIMEOUT_MS })
  })

  it("decodes every key", () => {
    const config = ok({
      prefix: "exports/daily",
      endpoint: "http://localhost:9000",
      access_key_env: "MINIO_ACCESS_KEY",
      secret_key_env: "MINIO_SECRET_KEY",
      session_token_env: "MINIO_SESSION_TOKEN",
      allow_anonymous: false,
      part_size: "16MiB",
      upload_concurrency: 8,
      storage_class: "STANDARD_IA",
      server_side_encryption: "aws:kms",
      kms_key_id: "arn:aws:kms:us-east-1:111122223333:key/abc",
      tags: { team: "data", "cost center": "a&b" }
    })
    expect(config.prefix).toBe("exports/daily/")
    expect(config.part_size).toBe(16 * 1024 ** 2)
    expect(config.upload_concurrency).toBe(8)
    expect(config.tags).toEqual({ team: "data", "cost center": "a&b" })
  })

  it.each([
    ["exports/daily", "exports/daily/"],
    ["exports/daily/", "exports/daily/"],
    ["/exports/daily", "exports/daily/"],
    ["//x", "x/"],
    ["a", "a/"],
    ["", ""],
    ["/", ""],
    ["a..b/c", "a..b/c/"]
  ])("normalizes prefix %j to %j", (prefix, expected) => {
    expect(normalizePrefix(prefix)).toBe(expected)
    expect(ok({ prefix }).prefix).toBe(expected)
  })

  it.each(["..", "../up", "a/../b", "a/..", "/../x"])("rejects the prefix %j", (prefix) => {
    expect(issues({ ...base, prefix })).toEqual([expect.stringMatching(/^prefix: .*'\.\.' segments/)])
  })

  it.each([".", "./", "a/./b/", "a/.", "./a", "/./x"])("rejects the prefix %j, whose '.' segment S3 would store literally", (prefix) => {
    expect(issues({ ...base, prefix })).toEqual([expect.stringMatching(/^prefix: .*must not contain '\.' segments.*e\.g\. exports\/daily\//)])
  })

  it.each(["a//b", "a//b/", "a//", "exports/daily//"])("rejects the prefix %j, whose empty segment S3 would store literally", (prefix) => {
    expect(issues({ ...base, prefix })).toEqual([expect.stringMatching(/^prefix: .*must not contain empty segments \('\/\/'\).*single \//)])
  })

  it.each([".hidden/", "a/.b/", "v1.2/", "a.../"])("accepts dots inside a segment: %j", (prefix) => {
    expect(ok({ prefix }).prefix).toBe(prefix)
  })

  it.each(["exports/{date}/", "{export}", "raw/{table}/{run_id}"])("rejects the template %j, which Rivet does not expand", (prefix) => {
    expect(issues({ ...base, prefix })).toEqual([expect.stringMatching(/^prefix: prefix contains '\{\w+\}', which Rivet does not expand .*\$\{RUN_DATE\}/)])
  })

  it("requires region, saying it can be any value with a custom endpoint", () => {
    const [issue] = issues({ bucket: "b-1", endpoint: "http://localhost:9000" })
    expect(issue).toMatch(/^region: region is required/)
    expect(issue).toContain("required but can be any value")
    expect(issues({ ...base, region: "" })).toEqual(["region: region must not be empty, e.g. us-east-1"])
  })

  it.each([
    ["", /must not be empty/],
    ["s3://my-bucket", /without s3:\/\//],
    ["my-bucket/exports", /put the folder part in prefix/],
    ["my bucket", /not a valid bucket name/],
    ["-bucket", /not a valid bucket name/],
    ["ab", /not a valid bucket name/]
  ])("rejects the bucket %j", (bucket, message) => {
    expect(issues({ ...base, bucket })).toEqual([expect.stringMatching(message)])
  })

  it("requires bucket", () => {
    expect(issues({ region: "us-east-1" })).toEqual([expect.stringMatching(/^bucket: bucket is required/)])
  })

  it.each([
    ["5MiB", 5 * 1024 ** 2],
    ["5GiB", 5 * 1024 ** 3],
    [8388608, 8388608]
  ])("accepts part_size %j", (part_size, bytes) => {
    expect(ok({ part_size }).part_size).toBe(bytes)
  })

  it.each(["4MiB", "6GiB", 1024, "big", 0])("rejects part_size %j", (part_size) => {
    expect(issues({ ...base, part_size })).toEqual([expect.stringMatching(/^part_size: /)])
  })

  it.each([0, 65, 1.5, -1])("rejects upload_concurrency %j", (upload_concurrency) => {
    expect(issues({ ...base, upload_concurrency })).toEqual([
      expect.stringMatching(/^upload_concurrency: .*1 to 64/)
    ])
  })

  it.each([
    ["2s", 2_000],
    ["500ms", 500],
    ["5m", 300_000],
    [30, 30_000]
  ])("accepts request_timeout %j", (request_timeout, ms) => {
    expect(ok({ request_timeout }).request_timeout).toBe(ms)
  })

  it.each(["0s", 0, "soon", -1])("rejects request_timeout %j", (request_timeout) => {
    expect(issues({ ...base, request_timeout })).toEqual([expect.stringMatching(/^request_timeout: /)])
  })

  it("rejects unknown keys, storage classes and encryption modes", () => {
    expect(issues({ ...base, bucket_name: "x" })[0]).toMatch(/^bucket_name: is unexpected/)
    expect(issues({ ...base, storage_class: "COLD" })[0]).toMatch(/^storage_class: /)
    expect(issues({ ...base, server_side_encryption: "aws:kms:dsse" })[0]).toMatch(/^server_side_encryption: /)
  })

  it("accepts kms_key_id only with aws:kms", () => {
    expect(issues({ ...base, kms_key_id: "k" })).toEqual([
      "kms_key_id: kms_key_id is only used with server_side_encryption: aws:kms"
    ])
    expect(issues({ ...base, server_side_encryption: "AES256", kms_key_id: "k" })).toHaveLength(1)
  })

  it("limits tags to what S3 accepts", () => {
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, "v"]))
    expect(issues({ ...base, tags: eleven })).toEqual([expect.stringMatching(/at most 10 tags/)])
    expect(issues({ ...base, tags: { "": "v" } })).toEqual([expect.stringMatching(/1 to 128 characters/)])
    expect(issues({ ...base, tags: { k: 1 } })[0]).toMatch(/^tags\.k: /)
  })
})

describe("S3Config credentials", () => {
  it("requires access_key_env and secret_key_env together", () => {
    expect(issues({ ...base, access_key_env: "A" })).toEqual([
      "secret_key_env: access_key_env and secret_key_env must be set together (both or neither)"
    ])
    expect(issues({ ...base, secret_key_env: "S" })).toEqual([
      "access_key_env: access_key_env and secret_key_env must be set together (both or neither)"
    ])
  })

  it("accepts session_token_env only with the pair", () => {
    expect(issues({ ...base, session_token_env: "T" })).toEqual([
      expect.stringMatching(/^session_token_env: session_token_env is only used with access_key_env and secret_key_env/)
    ])
    expect(ok({ access_key_env: "A", secret_key_env: "S", session_token_env: "T" }).session_token_env).toBe("T")
  })

  it("rejects env references together with aws_profile", () => {
    expect(issues({ ...base, access_key_env: "A", secret_key_env: "S", aws_profile: "prod" })).toEqual([
      "aws_profile: choose one: access_key_env/secret_key_env or aws_profile"
    ])
    expect(ok({ aws_profile: "prod" }).aws_profile).toBe("prod")
  })

  it("rejects a pasted key without echoing it", () => {
    const pasted = "AKIAIOSFODNN7EXAMPLE"
    const found = issues({ ...base, access_key_env: pasted, secret_key_env: "S" })
    expect(found).toEqual([expect.stringMatching(/^access_key_env: access_key_env looks like an access key itself/)])
    expect(found.join("\n")).not.toContain(pasted)
    const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    const secretIssues = issues({ ...base, access_key_env: "A", secret_key_env: secret })
    expect(secretIssues).toEqual([expect.stringMatching(/^secret_key_env: secret_key_env must be the name of an environment variable/)])
    expect(secretIssues.join("\n")).not.toContain(secret)
  })
})

describe("S3Config endpoint guard", () => {
  it("accepts a loopback emulator with keys (the MinIO case)", () => {
    const config = ok({
      bucket: "rivet-exports",
      endpoint: "http://localhost:9000",
      access_key_env: "MINIO_ACCESS_KEY",
      secret_key_env: "MINIO_SECRET_KEY"
    })
    expect(config.endpoint).toBe("http://localhost:9000")
  })

  it("rejects a non-loopback endpoint at decode time, at the endpoint path", () => {
    const [issue, ...rest] = issues({ ...base, endpoint: "https://acct.r2.cloudflarestorage.com" })
    expect(rest).toEqual([])
    expect(issue).toMatch(/^endpoint: endpoint 'https:\/\/acct\.r2\.cloudflarestorage\.com' points at a non-loopback host/)
    expect(issue).toContain("data-exfiltration / cleartext-credential risk")
    expect(issue).toContain("Drop `endpoint:` to use AWS S3")
  })

  it("lets allow_anonymous waive the guard", () => {
    expect(ok({ endpoint: "https://files.example.com", allow_anonymous: true }).endpoint).toBe(
      "https://files.example.com"
    )
  })

  it("requires an http(s) URL even when the guard is waived", () => {
    expect(issues({ ...base, endpoint: "localhost:9000", allow_anonymous: true })).toEqual([
      "endpoint: endpoint 'localhost:9000' has no scheme: write it as a URL, e.g. http://localhost:9000"
    ])
    expect(issues({ ...base, endpoint: "ftp://localhost" })[0]).toMatch(/must use http:\/\/ or https:\/\//)
  })
})

describe("S3Config JSON Schema", () => {
  it("describes every key", () => {
    const schema = JSONSchema.make(S3Config) as {
      $defs: Record<string, { properties: Record<string, { description?: string }> }>
    }
    const properties = schema.$defs["S3Destination"]?.properties ?? {}
    expect(Object.keys(properties)).toHaveLength(16)
    for (const [key, property] of Object.entries(properties)) {
      expect(property.description, key).toMatch(/\w/)
    }
  })
})
