import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import Database from "better-sqlite3"
import { afterAll, describe, expect, it } from "vitest"
import { loadConfig } from "../../../src/api.js"
import { makeBatch } from "../../../src/core/batch.js"
import { SinkError, SourceError } from "../../../src/core/errors.js"
import { type BatchTransform, defineSink, SinkDriver, type SourceQuery } from "../../../src/core/plugin.js"
import { ProgressReporter, type ProgressReporterShape } from "../../../src/core/progress.js"
import * as Sink from "../../../src/core/sink/index.js"
import { runConfig } from "../../../src/engine/run.js"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { idSchema as schema, idSource } from "../../support/id-source.js"

// A chunk's or page's result closes as soon as its last row is read, and the next unit starts reading while the one
// before still writes its part. The sink below holds the first data part back until a second unit has been opened:
// were the units run one after the other, it would wait out its timeout and fail the run.

const IDS = [1n, 2n, 3n, 4n, 5n, 6n]
const HOLD_MS = 5_000

/**
 * Ids 1..6, by key range (chunked) or after a key (keyset); each result's open and close are logged and announced.
 * Unit `failUnit` fails (for good) instead of giving its rows; unit `nullKeyUnit` gives rows whose keys are NULL; with
 * `shorterOnReread`, the first page read a second time ends one row earlier.
 */
const loggingSource = (
  events: Array<string>,
  announce: (event: string) => void,
  faults: {
    readonly failUnit?: number | undefined
    readonly nullKeyUnit?: number | undefined
    readonly shorterOnReread?: boolean | undefined
  },
  before: (unit: number) => Promise<void>
) => {
  let opened = 0
  let firstPageReads = 0
  const rowsOf = (query: SourceQuery): ReadonlyArray<bigint | null> => {
    const filter = query.where?.[0]
    if (filter === undefined && faults.shorterOnReread === true && ++firstPageReads > 1) return IDS.slice(0, (query.limit ?? 2) - 1)
    const ids =
      filter?._tag === "Between"
        ? IDS.filter((id) => id >= BigInt(filter.low) && id <= BigInt(filter.high))
        : filter?._tag === "After"
          ? IDS.filter((id) => id > BigInt(filter.values[0]!))
          : IDS
    return ids.slice(0, query.limit ?? ids.length)
  }
  return idSource("logging", 6, (query: SourceQuery) =>
    Effect.gen(function* () {
      const unit = ++opened
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          events.push(`open ${unit}`)
          announce(`open ${unit}`)
        }),
        () =>
          Effect.sync(() => {
            events.push(`close ${unit}`)
            announce(`close ${unit}`)
          })
      )
      const rows = unit === faults.nullKeyUnit ? rowsOf(query).map(() => null) : rowsOf(query)
      if (unit === faults.failUnit) {
        const error = new SourceError({ source: "logging", message: `unit ${unit} cannot be read`, retryable: false })
        return { schema, batches: Stream.fail(error) }
      }
      const batches = rows.length === 0 ? Stream.empty : Stream.make(makeBatch(schema, [rows]))
      return { schema, batches: Stream.concat(Stream.execute(Effect.promise(() => before(unit))), batches) }
    })
  )
}

/**
 * Keeps objects in memory; the first data part is put only once `release` resolves (or fails after HOLD_MS) — or,
 * with `failFirst`, fails then.
 */
const holdingSink = (events: Array<string>, release: Promise<void>, failFirst: boolean) => {
  let dataParts = 0
  const usageError = Sink.usageErrors("holding")
  const hold = Effect.tryPromise({
    try: () =>
      Promise.race([
        release,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("no second unit opened")), HOLD_MS))
      ]),
    catch: (cause) =>
      new SinkError({
        plugin: "holding",
        operation: "put",
        reason: "Unknown",
        message: `the first part was held ${HOLD_MS} ms: ${String(cause)}`,
        retryable: false
      })
  })
  const driver = Sink.make({
    spanPrefix: "HoldingSink",
    label: "Holding",
    uri: (key) => `holding:${key ?? ""}`,
    capabilities: { markers: true, blockSize: 1024 * 1024, concurrency: 1 },
    usageError,
    probe: false,
    put: (key) =>
      Effect.gen(function* () {
        if (!key.endsWith(".csv")) return
        const part = ++dataParts
        if (part === 1) yield* hold
        if (part === 1 && failFirst) return yield* usageError({ operation: "put", key, message: "disk full", reason: "Unknown" })
        events.push(`put ${part}`)
      })
  })
  return defineSink({ type: "holding", config: Schema.Struct({}), make: () => Layer.succeed(SinkDriver, driver) })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The pages the state file records as done (none before it exists). */
const pagesCommitted = (file: string): ReadonlyArray<number> => {
  if (!fs.existsSync(file)) return []
  const db = new Database(file, { readonly: true, timeout: 1_000 })
  try {
    return db.prepare("SELECT idx FROM rivet_units WHERE status = 'done'").pluck().all() as Array<number>
  } finally {
    db.close()
  }
}

/** A transform that passes the rows on and fails with a retryable error after them, the first time they end only. */
const failingOnce = (): BatchTransform => {
  let failed = false
  const lost = new SourceError({ source: "transform", message: "lost after the last row", retryable: true })
  return ({ schema, batches }) => ({
    schema,
    batches: Stream.concat(
      batches,
      Stream.suspend(() => (failed ? Stream.empty : ((failed = true), Stream.fail(lost))))
    )
  })
}

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/**
 * Runs the export. The first part is held until unit 2 opens — or, with `failUnit`, until 200 ms after that unit
 * failed and closed (time enough for a run that would not wait for the part to give up on it).
 */
const run = async (
  exportKeys: Record<string, unknown>,
  options: {
    readonly failFirst?: boolean
    readonly failUnit?: number
    readonly nullKeyUnit?: number
    readonly shorterOnReread?: boolean
    /** The export's first attempt fails with a retryable error once its rows are all read (a program's transform). */
    readonly failFirstAttemptAtEnd?: boolean
    /** Unit 2 gives its rows only once the state file records unit 1's page (at most HOLD_MS). */
    readonly page2AfterPage1Committed?: boolean
  } = {}
) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-overlap-"))
  dirs.push(dir)
  const events: Array<string> = []
  const awaited = options.failUnit === undefined ? "open 2" : `close ${options.failUnit}`
  let releaseNow = () => {}
  const release = new Promise<void>((resolve) => (releaseNow = resolve))
  const announce = (event: string) => {
    if (event !== awaited) return
    if (options.failUnit === undefined) releaseNow()
    else setTimeout(releaseNow, 200)
  }
  const stateFile = path.join(dir, "state.db")
  const before = async (unit: number): Promise<void> => {
    if (unit !== 2 || options.page2AfterPage1Committed !== true) return
    for (const deadline = Date.now() + HOLD_MS; Date.now() < deadline; await sleep(10)) {
      if (pagesCommitted(stateFile).includes(0)) {
        events.push("page 1 committed")
        return
      }
    }
  }
  const source = loggingSource(events, announce, options, before)
  const sink = holdingSink(events, release, options.failFirst ?? false)
  const reporter: ProgressReporterShape = {
    started: () => Effect.void,
    tick: () => Effect.void,
    finished: () => Effect.void,
    notice: () => Effect.void,
    intervalMs: 60_000
  }
  const config = {
    source: { type: "logging" },
    exports: [{ name: "ids", table: "ids", format: "csv", destination: { type: "holding" }, ...exportKeys }]
  }
  const [outcome] = await Effect.runPromise(
    Effect.flatMap(loadConfig(config as never, { configDir: dir, plugins: [source as never, sink as never] }), (loaded) =>
      runConfig(loaded, {
        state: sqliteStateLayer(options.page2AfterPage1Committed ? stateFile : ":memory:"),
        retry: { maxRetries: 2, initialDelay: "1 millis", maxDelay: "2 millis" },
        ...(options.failFirstAttemptAtEnd ? { transforms: { ids: failingOnce() } } : {})
      })
    ).pipe(Effect.provide(Layer.succeed(ProgressReporter, reporter)))
  )
  return { outcome: outcome!, events }
}

const succeeded = async (exportKeys: Record<string, unknown>) => {
  const { outcome, events } = await run(exportKeys)
  if (outcome._tag !== "success") throw new Error(`the run failed: ${outcome.error.message}`)
  return { rows: outcome.result.rows, events }
}

/** Unit 1's result closed before unit 2 opened, and unit 2 opened before unit 1's part was put. */
const expectOverlap = (events: ReadonlyArray<string>) => {
  expect(events.slice(0, 3)).toEqual(["open 1", "close 1", "open 2"])
  expect(events.indexOf("put 1")).toBeGreaterThan(events.indexOf("open 2"))
}

describe("a unit's part is finished while the next unit reads", () => {
  it("chunked, parallel: 1: chunk 2 opens (after chunk 1's result closed) before chunk 1's part is put", async () => {
    const { rows, events } = await succeeded({ mode: "chunked", chunk_size: 2, parallel: 1 })
    expect(rows).toBe(6)
    expectOverlap(events)
    expect(events.filter((event) => event.startsWith("put"))).toEqual(["put 1", "put 2", "put 3"])
  })

  it("keyset: page 2 opens after page 1's last key is read, before page 1's part is put; pages commit in order", async () => {
    const { rows, events } = await succeeded({ mode: "keyset", page_size: 2, chunk_checkpoint: true })
    expect(rows).toBe(6)
    expectOverlap(events)
    // Pages 1–3, and a fourth that finds no rows and writes nothing.
    expect(events.filter((event) => event.startsWith("open"))).toEqual(["open 1", "open 2", "open 3", "open 4"])
    expect(events.filter((event) => event.startsWith("put"))).toEqual(["put 1", "put 2", "put 3"])
  })

  it("keyset: a page whose part fails while later pages read fails the run with its error; every result is closed", async () => {
    const { outcome, events } = await run({ mode: "keyset", page_size: 2, chunk_checkpoint: true }, { failFirst: true })
    if (outcome._tag !== "failure") throw new Error("the run succeeded although page 1's part failed")
    expect(outcome.error.message).toContain("disk full")
    expect(events.slice(0, 3)).toEqual(["open 1", "close 1", "open 2"])
    expect(events).not.toContain("put 1")
    const opened = events.filter((event) => event.startsWith("open")).map((event) => event.slice(5))
    const closed = events.filter((event) => event.startsWith("close")).map((event) => event.slice(6))
    expect(closed.sort()).toEqual(opened.sort())
  })
  it("keyset: when a page fails, the page before it still finishes its part before the run fails", async () => {
    const { outcome, events } = await run({ mode: "keyset", page_size: 2, chunk_checkpoint: true }, { failUnit: 2 })
    if (outcome._tag !== "failure") throw new Error("the run succeeded although page 2 failed")
    expect(outcome.error.message).toContain("unit 2 cannot be read")
    expect(events).toEqual(["open 1", "close 1", "open 2", "close 2", "put 1"])
  })
  it("keyset: a page is recorded as soon as its part is committed, while the next page is still being read", async () => {
    const { outcome, events } = await run({ mode: "keyset", page_size: 2, chunk_checkpoint: true }, { page2AfterPage1Committed: true })
    if (outcome._tag !== "success") throw new Error(`the run failed: ${outcome.error.message}`)
    expect(events.indexOf("page 1 committed")).toBeGreaterThan(events.indexOf("put 1"))
    expect(events.indexOf("page 1 committed")).toBeLessThan(events.indexOf("close 2"))
  })
  it("keyset: a page of NULL keys fails the run, after the page before it was put", async () => {
    const { outcome, events } = await run({ mode: "keyset", page_size: 2, chunk_checkpoint: true }, { nullKeyUnit: 2 })
    if (outcome._tag !== "failure") throw new Error("the run succeeded although page 2's keys were NULL")
    expect(outcome.error.message).toBe("export 'ids': page 1 ended on a row with a NULL key")
    expect(events).toContain("put 1")
    expect(events).not.toContain("open 3")
  })
  it("keyset: a page read again after the next page started from its last key must end on that key, or the run fails", async () => {
    const options = { failFirstAttemptAtEnd: true, shorterOnReread: true }
    const { outcome } = await run({ mode: "keyset", page_size: 2, chunk_checkpoint: true }, options)
    if (outcome._tag !== "failure") throw new Error("the run succeeded although page 0 was re-read with another last key")
    expect(outcome.error.message).toBe(
      "export 'ids': page 0 was read again and ended on another key than the page after it started from"
    )
  })
})
