import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { S3Server } from "../../../support/s3/layer.js"
import { startS3Server } from "../../../support/s3/server.js"
import { MiB, randomBlock, readAll, sha256, testDriver, concat } from "./harness.js"

const BUCKET = "rivet-s3-driver"
const PREFIX = "exports/daily/"

const driver = () =>
  Effect.flatMap(S3Server, (server) => testDriver(server, BUCKET, { extra: { prefix: "exports/daily", part_size: "5MiB" } }))
const stored = (key: string) =>
  Effect.flatMap(S3Server, (server) => Effect.promise(() => server.getObject(BUCKET, `${PREFIX}${key}`)))
const storedKeys = (key: string) =>
  Effect.flatMap(S3Server, (server) => Effect.promise(() => server.listObjects(BUCKET, `${PREFIX}${key}`))).pipe(
    Effect.map((objects) => objects.map((o) => o.key))
  )
const inProgress = (key: string) =>
  Effect.flatMap(S3Server, (server) => Effect.promise(() => server.listMultipartUploads(BUCKET))).pipe(
    Effect.map((uploads) => uploads.filter((upload) => upload.key === `${PREFIX}${key}`))
  )

layer(S3Server.layer({ buckets: [BUCKET] }))("S3 driver against an S3-protocol server", (it) => {
  it.scoped("create is a PutObject with If-None-Match: * — of writers racing for a key exactly one wins; readRange is a ranged GET", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const bytes = (text: string) => new TextEncoder().encode(text)
      const outcomes = yield* Effect.all(
        ["first", "second", "third"].map((text) => s3.create!("table/metadata/v1.metadata.json", bytes(text), "application/json")),
        { concurrency: "unbounded" }
      )
      expect([...outcomes].sort()).toEqual(["created", "exists", "exists"])
      const kept = new TextDecoder().decode(yield* stored("table/metadata/v1.metadata.json"))
      expect(["first", "second", "third"]).toContain(kept)
      expect(new TextDecoder().decode(yield* s3.readRange!("table/metadata/v1.metadata.json", 1, 3))).toBe(kept.slice(1, 4))
    })
  )

  it.scoped("puts a small object under the prefix and reads it back", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const bytes = randomBlock(300 * 1024)
      yield* s3.put("put/orders.parquet", bytes, "application/vnd.apache.parquet")
      expect(sha256(yield* stored("put/orders.parquet"))).toBe(sha256(bytes))
      expect(sha256(yield* readAll(s3, "put/orders.parquet"))).toBe(sha256(bytes))
    })
  )

  it.scoped("writes a multipart object whose bytes equal the blocks, visible only after complete", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const blocks = [randomBlock(5 * MiB), randomBlock(5 * MiB), randomBlock(MiB + 17)]
      const upload = yield* s3.begin("mp/orders_20260406_120000_123.parquet", "application/vnd.apache.parquet")
      expect(yield* inProgress("mp/orders_20260406_120000_123.parquet")).toHaveLength(1)
      // Out of order and at once, as the runtime may send them.
      yield* Effect.all(
        [2, 0, 1].map((index) => upload.writeBlock(index, blocks[index] as Uint8Array)),
        { concurrency: "unbounded" }
      )
      expect(yield* storedKeys("mp/")).toEqual([])
      yield* upload.complete(3)
      const expected = sha256(concat(blocks))
      expect(sha256(yield* stored("mp/orders_20260406_120000_123.parquet"))).toBe(expected)
      expect(sha256(yield* readAll(s3, "mp/orders_20260406_120000_123.parquet"))).toBe(expected)
      expect(yield* inProgress("mp/orders_20260406_120000_123.parquet")).toEqual([])
      // complete is idempotent, and abort after complete leaves the object alone.
      yield* upload.complete(3)
      yield* upload.abort
      expect(sha256(yield* stored("mp/orders_20260406_120000_123.parquet"))).toBe(expected)
    })
  )

  it.scoped("replaces a block written twice (a retried block)", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const first = randomBlock(5 * MiB)
      const last = randomBlock(1000)
      const upload = yield* s3.begin("retry/part.csv", "text/csv")
      yield* upload.writeBlock(0, randomBlock(5 * MiB))
      yield* upload.writeBlock(1, last)
      yield* upload.writeBlock(0, first)
      yield* upload.complete(2)
      expect(sha256(yield* stored("retry/part.csv"))).toBe(sha256(concat([first, last])))
    })
  )

  it.scoped("abort leaves no upload in progress and nothing under the key", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const upload = yield* s3.begin("abort/orders.parquet", "application/vnd.apache.parquet")
      yield* upload.writeBlock(0, randomBlock(5 * MiB))
      expect(yield* inProgress("abort/orders.parquet")).toHaveLength(1)
      yield* upload.abort
      expect(yield* inProgress("abort/orders.parquet")).toEqual([])
      expect(yield* storedKeys("abort/")).toEqual([])
      yield* upload.abort
      const error = yield* Effect.flip(upload.writeBlock(1, randomBlock(10)))
      expect(error.message).toContain("already aborted")
    })
  )

  it.scoped("refuses to complete with a block missing, naming it", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const upload = yield* s3.begin("gap/orders.ndjson", "application/x-ndjson")
      yield* upload.writeBlock(0, randomBlock(5 * MiB))
      const error = yield* Effect.flip(upload.complete(2))
      expect(error.retryable).toBe(false)
      expect(error.message).toBe(
        "S3 CompleteMultipartUpload s3://rivet-s3-driver/exports/daily/gap/orders.ndjson: block 1 (part 2 of 2) was never written"
      )
      yield* upload.abort
      expect(yield* inProgress("gap/orders.ndjson")).toEqual([])
      expect(yield* storedKeys("gap/")).toEqual([])
    })
  )

  it.scoped("completes an upload with no blocks as an empty object", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const upload = yield* s3.begin("empty/orders.csv", "text/csv")
      yield* upload.complete(0)
      expect((yield* stored("empty/orders.csv")).byteLength).toBe(0)
      expect(yield* inProgress("empty/orders.csv")).toEqual([])
    })
  )

  it.scoped("lists objects under the prefix with relative keys, without the doctor probe", () =>
    Effect.gen(function* () {
      const server = yield* S3Server
      const s3 = yield* testDriver(server, BUCKET, { extra: { prefix: "listing/" } })
      const other = yield* testDriver(server, BUCKET, { extra: { prefix: "listing-other/" } })
      yield* s3.put("a.csv", randomBlock(10), "text/csv")
      yield* s3.put("nested/b.csv", randomBlock(20), "text/csv")
      yield* other.put("c.csv", randomBlock(30), "text/csv")
      yield* s3.check
      yield* s3.put(".rivet_doctor_probe", randomBlock(2), "text/plain")
      const listed = yield* s3.list ?? Effect.die("list is required")
      expect([...listed].sort((x, y) => x.key.localeCompare(y.key))).toEqual([
        { key: "a.csv", size: 10 },
        { key: "nested/b.csv", size: 20 }
      ])
    })
  )

  it.scoped("writes objects with tags, storage class and encryption headers", () =>
    Effect.gen(function* () {
      const server = yield* S3Server
      const s3 = yield* testDriver(server, BUCKET, {
        extra: {
          prefix: "headers",
          storage_class: "STANDARD_IA",
          server_side_encryption: "AES256",
          tags: { team: "data eng", run: "a&b=c" }
        }
      })
      const bytes = randomBlock(1024)
      yield* s3.put("tagged.csv", bytes, "text/csv")
      const upload = yield* s3.begin("tagged-mp.csv", "text/csv")
      yield* upload.writeBlock(0, bytes)
      yield* upload.complete(1)
      expect(sha256(yield* Effect.promise(() => server.getObject(BUCKET, "headers/tagged-mp.csv")))).toBe(sha256(bytes))
    })
  )

  it.scoped("check passes on a writable bucket and removes its probe", () =>
    Effect.gen(function* () {
      const server = yield* S3Server
      const s3 = yield* testDriver(server, BUCKET, { extra: { prefix: "doctor" } })
      yield* s3.check
      const probes = yield* Effect.promise(() => server.listObjects(BUCKET, "doctor/"))
      expect(probes).toEqual([])
      const operations = server.requests().map((r) => r.operation)
      expect(operations).toEqual(expect.arrayContaining(["GetBucketLocation", "PutObject", "DeleteObject"]))
    })
  )

  it.scoped("reading a missing key fails with NotFound", () =>
    Effect.gen(function* () {
      const s3 = yield* driver()
      const error = yield* Effect.flip(readAll(s3, "nope/missing.csv"))
      expect(error.reason).toBe("NotFound")
      expect(error.retryable).toBe(false)
      expect(error.message).toContain("S3 GetObject s3://rivet-s3-driver/exports/daily/nope/missing.csv failed")
    })
  )

  it.scoped("pendingUploads lists the uploads in progress under a key prefix (relative keys) and aborts them by id", () =>
    Effect.gen(function* () {
      const server = yield* S3Server
      const s3 = yield* driver()
      const other = yield* testDriver(server, BUCKET, { extra: { prefix: "elsewhere", part_size: "5MiB" } })
      const pending = s3.pendingUploads!
      yield* s3.begin("pending/orders_1.csv", "text/csv")
      yield* s3.begin("pending/orders_1.csv", "text/csv")
      yield* s3.begin("pending/orders_2.csv", "text/csv")
      const unrelated = yield* other.begin("pending/orders_1.csv", "text/csv")
      const listed = yield* pending.list("pending/orders_1")
      expect(listed.map((upload) => upload.key)).toEqual(["pending/orders_1.csv", "pending/orders_1.csv"])
      expect(new Set(listed.map((upload) => upload.id)).size).toBe(2)
      yield* Effect.forEach(listed, pending.abort)
      // An upload already gone counts as aborted.
      yield* pending.abort(listed[0]!)
      expect(yield* inProgress("pending/orders_1.csv")).toEqual([])
      expect((yield* pending.list("")).map((upload) => upload.key)).toEqual(["pending/orders_2.csv"])
      expect(yield* other.pendingUploads!.list("pending/")).toHaveLength(1)
      yield* Effect.forEach(yield* pending.list(""), pending.abort)
      yield* unrelated.abort
    })
  )

  it.scoped("pendingUploads reads every page of a paginated listing (two uploads per page)", () =>
    Effect.gen(function* () {
      const paging = yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const own = await startS3Server({ uploadsPageSize: 2 })
          await own.createBucket(BUCKET)
          return own
        }),
        (own) => Effect.promise(() => own.stop())
      )
      const s3 = yield* testDriver(paging, BUCKET, { extra: { prefix: "exports/daily", part_size: "5MiB" } })
      for (const key of ["a.csv", "b.csv", "b.csv", "b.csv", "c.csv"]) yield* s3.begin(`paged/${key}`, "text/csv")
      const listed = yield* s3.pendingUploads!.list("paged/")
      expect(listed.map((upload) => upload.key)).toEqual(["paged/a.csv", "paged/b.csv", "paged/b.csv", "paged/b.csv", "paged/c.csv"])
      expect(new Set(listed.map((upload) => upload.id)).size).toBe(5)
      expect(paging.requests().filter((request) => request.operation === "ListMultipartUploads")).toHaveLength(3)
    })
  )
})
