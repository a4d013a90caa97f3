import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { adminConnection, noMysql, testMysqlUrl } from "../support/mysql.js"
import { type ReceivedSpan, startOtlpReceiver } from "../support/otlp.js"
import { testPgUrl } from "../support/pg.js"

// Database error texts quote data: a failing `rivet run` shows the server's text to the user who ran it, while the
// OTLP collector gets the error's class, the server's error code and Rivet's wording with the quote withheld. Each
// case runs the CLI against a real OTLP/HTTP receiver on loopback and searches every byte it received for a canary
// value stored in the table the failing query reads; the received spans must still carry the failure.

const CANARY = `CANARYrow${randomBytes(6).toString("hex")}`
const WITHHELD = "[withheld from telemetry]"
const dirs: Array<string> = []

afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

interface Failure {
  readonly source: Record<string, unknown>
  readonly query: string
  /** What the server's text says, as the terminal must still show it. */
  readonly shown: RegExp
  readonly code: string
  /** Rivet's wording that must reach telemetry. */
  readonly wording: string
  /** More keys of the export (its mode), and of the environment. */
  readonly exportKeys?: Record<string, unknown>
  readonly env?: Record<string, string>
}

/** Runs the failing export with telemetry on and checks what the terminal and the collector got. */
const runFailing = async (failure: Failure) => {
  const receiver = await startOtlpReceiver()
  try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-otel-redact-"))
    dirs.push(dir)
    const file = writeConfig(
      JSON.stringify({
        source: failure.source,
        exports: [{ name: "leaky", query: failure.query, format: "csv", destination: { type: "local", path: dir }, ...failure.exportKeys }]
      })
    )
    dirs.push(path.dirname(file))
    const result = await runCli(["run", "-c", file], {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: "rivet-redaction", ...failure.env }
    })

    // The user who ran the command sees the server's own text, the canary included.
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(failure.shown)
    expect(result.stderr).toContain(CANARY)

    // Nothing the collector received, in any request, holds the canary...
    expect(receiver.bodies().some(({ path }) => path === "/v1/traces")).toBe(true)
    const leaks = receiver.bodies().flatMap(({ path, body }) => {
      const at = body.indexOf(CANARY)
      return at < 0 ? [] : [`${path}: …${body.slice(Math.max(0, at - 200), at + 40)}…`]
    })
    expect(leaks).toEqual([])

    // ...yet it received the failure: an error status, the class, the code and Rivet's wording.
    const spans = receiver.spans()
    const failed = spans.filter((span) => span.status.code === 2)
    expect(failed.length).toBeGreaterThan(0)
    const exportSpan = spans.find((span) => span.name === "Pipeline.runExport")
    expect(exportSpan?.status.code).toBe(2)
    expect(exportSpan?.attributes).toMatchObject({
      "rivet.error.kind": "SourceError",
      "error.type": "SourceError",
      "db.response.status_code": failure.code
    })
    expect(exportSpan?.status.message).toContain(failure.wording)
    expect(exportSpan?.status.message).toContain(WITHHELD)
    const exception = exceptionOf(exportSpan!)
    expect(exception["exception.type"]).toBe("SourceError")
    expect(exception["exception.message"]).toContain(failure.wording)
    expect(String(exception["exception.stacktrace"])).toMatch(/^SourceError: .*\n\s+at /)

    for (const span of failed) expect(span.attributes["error.type"]).toBeDefined()
    return { spans, stderr: result.stderr }
  } finally {
    await receiver.close()
  }
}

const exceptionOf = (span: ReceivedSpan) => {
  const event = span.events.find((candidate) => candidate.name === "exception")
  expect(event).toBeDefined()
  return event!.attributes
}

describe("telemetry of a failing PostgreSQL query", () => {
  let sql: postgres.Sql
  beforeAll(async () => {
    sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    // A read-only export cannot itself hit a unique violation; a function it calls can surface one as it is: the
    // server's 23505, whose DETAIL quotes the key. This one raises exactly that for the value it is given.
    await sql.unsafe(`
      DROP TABLE IF EXISTS otel_redact;
      CREATE TABLE otel_redact (id int PRIMARY KEY, v text);
      INSERT INTO otel_redact VALUES (1, '12'), (2, '${CANARY}'), (3, '7'), (4, '${CANARY}');
      CREATE OR REPLACE FUNCTION otel_redact_register(value text) RETURNS text LANGUAGE plpgsql AS $$
      BEGIN
        IF value LIKE 'CANARY%' THEN
          RAISE unique_violation USING MESSAGE = 'duplicate key value violates unique constraint "codes_pkey" for ' || value,
            DETAIL = 'Key (code)=(' || value || ') already exists.';
        END IF;
        RETURN value;
      END $$;
    `)
  })
  afterAll(async () => {
    await sql.unsafe(`DROP TABLE IF EXISTS otel_redact; DROP FUNCTION IF EXISTS otel_redact_register(text)`)
    await sql.end()
  })

  it("22P02 (invalid input syntax for type integer): the collector gets the class and SQLSTATE, never the value", async () => {
    await runFailing({
      source: { type: "postgres", url: testPgUrl() },
      query: "SELECT id, v::int AS n FROM otel_redact ORDER BY id",
      shown: /invalid input syntax for type integer/,
      code: "22P02",
      wording: "PostgreSQL error 22P02 while"
    })
  }, 60_000)

  it("22P02 in a chunk read by a worker thread: the thread's spans withhold the value too", async () => {
    // Chunk 0 (id 1) holds the main thread for 8 s, so the worker thread, once started, takes chunk 1 (id 2) and fails
    // there at once; 8 s is far more than a thread takes to start even on a loaded machine.
    const { spans } = await runFailing({
      source: { type: "postgres", url: testPgUrl() },
      query: "SELECT id, v::int AS n FROM otel_redact, LATERAL (SELECT pg_sleep(CASE WHEN id = 1 THEN 8 ELSE 0 END)) AS slow",
      exportKeys: { mode: "chunked", chunk_column: "id", chunk_size: 1, parallel: 2 },
      env: { RIVET_LANES: "1" },
      shown: /chunk 1 \(id 2\.\.2\): .*invalid input syntax for type integer/,
      code: "22P02",
      wording: "PostgreSQL error 22P02 while"
    })
    const inThread = spans.filter((span) => span.name === "Unit.run" && span.attributes["rivet.lane"] === "lane-1")
    expect(inThread.map((span) => [span.status.code, span.attributes["db.response.status_code"]])).toContainEqual([2, "22P02"])
    // The chunk's key range is read from the database too: the terminal names it, the collector does not.
    const exportSpan = spans.find((span) => span.name === "Pipeline.runExport")
    expect(exportSpan?.status.message).toMatch(/^chunk 1 \(\[withheld from telemetry\]\): export "leaky": PostgreSQL error 22P02 /)
  }, 60_000)

  it("23505 (unique violation, key in the message and DETAIL): the collector never gets the key", async () => {
    await runFailing({
      source: { type: "postgres", url: testPgUrl() },
      query: "SELECT id, otel_redact_register(v) AS code FROM otel_redact ORDER BY id",
      shown: /duplicate key value violates unique constraint "codes_pkey".*Key \(code\)=/,
      code: "23505",
      wording: "PostgreSQL error 23505 while"
    })
  }, 60_000)
})

describe.skipIf(noMysql())("telemetry of a failing MySQL query", () => {
  beforeAll(async () => {
    const connection = await adminConnection()
    try {
      // SIGNAL: a stored function that rejects a value, quoting it (errno 1644, SQLSTATE 45000).
      await connection.query(`
        DROP TABLE IF EXISTS otel_redact;
        CREATE TABLE otel_redact (id int PRIMARY KEY, v varchar(64));
        INSERT INTO otel_redact VALUES (1, '${CANARY}'), (2, '${CANARY}'), (3, '${CANARY}'), (4, '${CANARY}'), (5, '${CANARY}');
        DROP FUNCTION IF EXISTS otel_redact_check;
        CREATE FUNCTION otel_redact_check(value varchar(64)) RETURNS varchar(64) DETERMINISTIC
        BEGIN
          IF value LIKE 'CANARY%' THEN
            SET @message = CONCAT('rejected value ', value);
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = @message;
          END IF;
          RETURN value;
        END;
      `)
    } finally {
      await connection.end()
    }
  })
  afterAll(async () => {
    const connection = await adminConnection()
    await connection.query("DROP TABLE IF EXISTS otel_redact; DROP FUNCTION IF EXISTS otel_redact_check")
    await connection.end()
  })

  it("SIGNAL with the value in MESSAGE_TEXT (1644): the collector gets the class and errno, never the value", async () => {
    await runFailing({
      source: { type: "mysql", url: testMysqlUrl() },
      query: "SELECT id, otel_redact_check(v) AS v FROM otel_redact ORDER BY id",
      shown: /rejected value CANARY/,
      code: "1644",
      wording: "MySQL error 1644 (ER_SIGNAL_EXCEPTION) while"
    })
  }, 60_000)

  it("Duplicate entry '…' for key (1062, a GROUP BY over a non-deterministic key): the collector never gets the entry", async () => {
    await runFailing({
      source: { type: "mysql", url: testMysqlUrl() },
      query: "SELECT COUNT(*) AS n, CONCAT(v, FLOOR(RAND(0) * 2)) AS k FROM otel_redact GROUP BY k",
      shown: /Duplicate entry 'CANARY\w+' for key/,
      code: "1062",
      wording: "MySQL error 1062 (ER_DUP_ENTRY) while"
    })
  }, 60_000)
})
