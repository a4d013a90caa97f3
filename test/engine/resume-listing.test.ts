import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, expect, it } from "vitest"
import { ProgressReporter, runExports, SinkError, silentProgress } from "../../src/index.js"
import { memorySink } from "../../src/testing/index.js"
import { testPgUrl } from "../support/pg.js"
import { untyped } from "../support/config.js"

// A resumed run lists the destination to report files of the interrupted attempt. That report is informational: a
// listing that fails (a bucket policy without s3:ListBucket) must neither fail the run nor come after _SUCCESS.
const TABLE = "resume_listing_src"
const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })

beforeAll(() => sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}; CREATE TABLE ${TABLE} AS SELECT i::int8 AS id FROM generate_series(1, 1000) AS i`))
afterAll(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
})

const denied = (operation: string) =>
  new SinkError({ plugin: "memory", operation, reason: "PermissionDenied", message: `${operation}: AccessDenied`, retryable: false })

it("a resumed run whose listing is denied still publishes, and says why it cannot report leftovers", async () => {
  let failing: "chunk2" | "list" = "chunk2"
  const sink = memorySink({
    failWith: (call) =>
      failing === "chunk2" && call.key?.includes("_chunk2_") ? denied(call.operation) : failing === "list" && call.operation === "list" ? denied("list") : undefined
  })
  const notices: Array<string> = []
  const progress = Layer.succeed(ProgressReporter, {
    ...Effect.runSync(Effect.provide(ProgressReporter, silentProgress)),
    notice: (_name: string, message: string) => Effect.sync(() => void notices.push(message))
  })
  const config = untyped({
    source: { type: "postgres", url: testPgUrl() },
    exports: [{ name: "ids", table: TABLE, format: "csv", mode: "chunked", chunk_column: "id", chunk_size: 250, chunk_checkpoint: true, destination: { type: "memory" } }]
  })
  const options = { configDir: fs.mkdtempSync(path.join(os.tmpdir(), "rivet-resume-listing-")), plugins: [sink.plugin], progress }

  await expect(runExports(config, options)).rejects.toMatchObject({ _tag: "SinkError" })
  expect(sink.objects().has("_SUCCESS")).toBe(false)

  failing = "list"
  const [result] = await runExports(config, { ...options, resume: true })
  expect(sink.calls().some((call) => call.operation === "list")).toBe(true)
  expect(result!.manifest?.row_count).toBe(1000)
  expect(sink.objects().has("_SUCCESS")).toBe(true)
  expect(result!.untracked).toEqual([])
  expect(notices.some((notice) => notice.startsWith("could not list the destination for files of the interrupted attempt") && notice.includes("AccessDenied"))).toBe(true)
})
