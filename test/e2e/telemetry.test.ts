import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { GetObjectCommand, ListObjectsV2Command } from "@aws-sdk/client-s3"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import type { ProcessResult } from "../support/process.js"
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../support/otlp.js"
import { testPgUrl } from "../support/pg.js"
import { startS3Server, type S3TestServer } from "../support/s3/server.js"
import { isolateAwsEnv, noAmbientCredentials, s3Destination, testS3Client } from "./s3-support.js"

// `rivet run` with OTEL_EXPORTER_OTLP_ENDPOINT set sends its trace and metrics to a real OTLP/HTTP receiver on
// loopback: the span tree, its attributes and the metrics match the manifest, no secret and no row value leaves,
// and a collector that is down or hangs costs the run at most 2 seconds.

const HEX = randomBytes(6).toString("hex")
const PG_PASSWORD = `CANARYpw${HEX}`
const S3_SECRET = `CANARYs3${HEX}`
const ROW_VALUE = `CANARYrow${HEX}`
const TABLE = "otel_t"
const BUCKET = "rivet-otel"
const ROWS = 3000

let sql: postgres.Sql
let s3: S3TestServer
const dirs: Array<string> = []

beforeAll(async () => {
  isolateAwsEnv()
  process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] = "true"
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, v text);
    INSERT INTO ${TABLE} SELECT i, CASE WHEN i = 7 THEN '${ROW_VALUE}' ELSE 'v' || i END FROM generate_series(1, ${ROWS}) AS i;
  `)
  s3 = await startS3Server({ secretAccessKey: S3_SECRET })
  await s3.createBucket(BUCKET)
}, 60_000)

afterAll(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
  await s3.stop()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** The test database's URL with a password in it: trust authentication ignores it, a leak would show it. */
const urlWithPassword = () => {
  const url = new URL(testPgUrl())
  url.password = PG_PASSWORD
  return url.toString()
}

const run = async (
  prefix: string,
  env: Record<string, string>,
  exportKeys: Record<string, unknown> = { table: TABLE, chunk_size: 1000 },
  topKeys: Record<string, unknown> = {}
): Promise<ProcessResult & { readonly ms: number }> => {
  const file = writeConfig(
    JSON.stringify({
      ...topKeys,
      source: { type: "postgres", url: urlWithPassword() },
      exports: [{ name: "otel", mode: "chunked", format: "csv", destination: s3Destination(s3, BUCKET, { prefix }), ...exportKeys }]
    })
  )
  dirs.push(path.dirname(file))
  const started = Date.now()
  const result = await runCli(["run", "-c", file], {
    env: { ...noAmbientCredentials(), AWS_ACCESS_KEY_ID: s3.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: S3_SECRET, ...env }
  })
  return { ...result, ms: Date.now() - started }
}

const readManifest = async (prefix: string) => {
  const client = testS3Client(s3)
  const listed = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }))
  expect(listed.Contents?.some((object) => object.Key === `${prefix}_SUCCESS`)).toBe(true)
  const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: `${prefix}manifest.json` }))
  const text = await object.Body!.transformToString()
  return JSON.parse(text) as { row_count: number; part_count: number; parts: Array<{ path: string; size_bytes: number }> }
}

const ancestors = (spans: ReadonlyArray<ReceivedSpan>, span: ReceivedSpan): Array<string> => {
  const byId = new Map(spans.map((candidate) => [candidate.spanId, candidate]))
  const names: Array<string> = []
  for (let parent = byId.get(span.parentSpanId ?? ""); parent; parent = byId.get(parent.parentSpanId ?? "")) names.push(parent.name)
  return names
}

const otelEnv = (endpoint: string) => ({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_SERVICE_NAME: "rivet-test" })

describe("telemetry over OTLP/HTTP", () => {
  let receiver: OtlpReceiver
  beforeAll(async () => {
    receiver = await startOtlpReceiver()
  })
  afterAll(() => receiver.close())

  it("sends one trace (run → export → unit → part → S3 call, source open) and metrics equal to the manifest", async () => {
    const result = await run("traced/", otelEnv(receiver.endpoint))
    expect(result.stderr).not.toContain("Error")
    expect(result.code).toBe(0)
    const manifest = await readManifest("traced/")
    const bytes = manifest.parts.reduce((sum, part) => sum + part.size_bytes, 0)

    const spans = receiver.spans()
    expect(new Set(spans.map((span) => span.traceId)).size).toBe(1)
    expect(new Set(spans.map((span) => span.service))).toEqual(new Set(["rivet-test"]))
    const named = (name: string) => spans.filter((span) => span.name === name)
    expect(named("Rivet.runConfig")).toHaveLength(1)
    const [exportSpan] = named("Pipeline.runExport")
    expect(exportSpan?.attributes).toMatchObject({
      "rivet.export": "otel",
      "rivet.mode": "chunked",
      "rivet.status": "success",
      "rivet.rows": manifest.row_count,
      "rivet.bytes": bytes,
      "rivet.parts": manifest.part_count,
      "rivet.retries": 0
    })
    expect(ancestors(spans, exportSpan!)).toContain("Rivet.runConfig")
    const units = named("Unit.run")
    expect(units).toHaveLength(3)
    for (const unit of units) {
      expect(ancestors(spans, unit)).toContain("Pipeline.runExport")
      expect(unit.attributes).toMatchObject({ "rivet.unit.kind": "chunk", "rivet.rows": 1000 })
    }
    const parts = named("Upload.part")
    expect(parts.map((part) => part.attributes["rivet.part.key"]).sort()).toEqual(
      manifest.parts.map((part) => part.path).sort()
    )
    for (const part of parts) expect(ancestors(spans, part)[0]).toBe("Unit.run")
    const s3Calls = spans.filter((span) => span.name.startsWith("S3Sink."))
    expect(s3Calls.length).toBeGreaterThanOrEqual(manifest.part_count)
    expect(s3Calls.some((span) => ancestors(spans, span)[0] === "Upload.part")).toBe(true)
    const opened = spans.filter((span) => span.name.startsWith("PostgresSource.open"))
    expect(opened).toHaveLength(3)
    for (const span of opened) expect(ancestors(spans, span)[0]).toBe("Unit.run")

    const total = (metric: string) =>
      receiver
        .points()
        .filter((point) => point.metric === metric && point.attributes["export"] === "otel")
        .reduce((latest, point) => Math.max(latest, point.value), 0)
    expect(total("rivet.rows")).toBe(manifest.row_count)
    expect(total("rivet.bytes")).toBe(bytes)
    expect(total("rivet.parts")).toBe(manifest.part_count)
    expect(total("rivet.unit.duration")).toBe(3)
    expect(total("rivet.export.duration")).toBe(1)

    for (const { body } of receiver.bodies()) {
      for (const secret of [PG_PASSWORD, S3_SECRET, ROW_VALUE]) expect(body).not.toContain(secret)
    }
  }, 60_000)

  it("chunks run in a worker thread join the run's trace (collector named by the config's telemetry:)", async () => {
    const lanes = await startOtlpReceiver()
    try {
      // Each one-row chunk sleeps 0.4 s, so that the worker thread is ready before the main thread has run them all.
      const result = await run(
        "lanes/",
        { RIVET_LANES: "1" },
        {
          query: "SELECT i AS id FROM generate_series(1, 8) AS i, LATERAL (SELECT pg_sleep(0.4)) AS slow",
          chunk_column: "id",
          chunk_size: 1,
          parallel: 2
        },
        { telemetry: { endpoint: `${lanes.endpoint}/`, service_name: "rivet-lanes" } }
      )
      expect(result.code).toBe(0)
      expect(result.stderr).toMatch(/chunks ran in 1 worker thread \([1-9]\d*\)/)
      const spans = lanes.spans()
      expect(new Set(spans.map((span) => span.traceId)).size).toBe(1)
      expect(new Set(spans.map((span) => span.service))).toEqual(new Set(["rivet-lanes"]))
      const units = spans.filter((span) => span.name === "Unit.run")
      expect(units).toHaveLength(8)
      const inWorker = units.filter((span) => span.attributes["rivet.lane"] === "lane-1")
      expect(inWorker.length).toBeGreaterThan(0)
      for (const unit of inWorker) expect(ancestors(spans, unit)).toContain("Pipeline.runExport")
      const rows = lanes.points().filter((point) => point.metric === "rivet.rows")
      expect(Math.max(...rows.map((point) => point.value))).toBe(8)
    } finally {
      await lanes.close()
    }
  }, 60_000)

  it("a collector that is down or hangs costs the run only its bounded shutdown flushes, and the run succeeds", async () => {
    const plain = await run("plain/", {})
    expect(plain.code).toBe(0)
    const closed = await startOtlpReceiver()
    const closedEndpoint = closed.endpoint
    await closed.close()
    const down = await run("down/", otelEnv(closedEndpoint))
    expect(down.code).toBe(0)
    const hanging = await startOtlpReceiver({ hang: true })
    try {
      const hung = await run("hung/", otelEnv(hanging.endpoint))
      expect(hung.code).toBe(0)
      expect(hanging.bodies().length).toBeGreaterThan(0)
      // The summary is a run's last output; after it come the two flushes of the telemetry's shutdown (800 ms each
      // at most) and the process's exit. Timed from there, a loaded machine's noise in the whole run does not count;
      // the bound leaves ~2.4 s for a slow exit and stays below the OTLP exporter's own 10 s default timeout, which
      // is what a shutdown not bounded by Rivet's 800 ms would wait out against a hanging collector.
      expect(hung.msAfterOutput).toBeLessThan(4000)
      // Nothing during the run waits on the collector either (spans leave in the background). Measured against the
      // plain run just before, as a ratio (1.5×: two runs of the same export on a loaded 2-core machine differ by
      // that much) plus the shutdown's flushes: a run that blocks on the hanging collector takes far longer.
      expect(hung.ms).toBeLessThan(plain.ms * 1.5 + 4000)
    } finally {
      await hanging.close()
    }
    // The same bounds, for the same reasons, against a collector that refuses connections.
    expect(down.msAfterOutput).toBeLessThan(4000)
    expect(down.ms).toBeLessThan(plain.ms * 1.5 + 4000)
    await readManifest("hung/")
  }, 60_000)
})
