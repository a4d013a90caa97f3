import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { afterAll, describe, expect, expectTypeOf, it } from "vitest"
import {
  batchToRows,
  columnValues,
  ConfigError,
  type ExportRun,
  loadConfig,
  makeBatch,
  mapRows,
  PluginError,
  ProgressReporter,
  runExports,
  runExportsEffect,
  type BatchTransform,
  type SourceError,
  type StateError
} from "../../src/index.js"
import { memorySink, memorySource } from "../../src/testing/index.js"

const schema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "status", type: { kind: "string" } }
  ]
} as const
const rows = Array.from({ length: 25 }, (_, i) => ({ id: BigInt(i), status: i % 5 === 0 ? "test" : "live" }))
const configDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-transforms-"))
afterAll(() => fs.rmSync(configDir, { recursive: true, force: true }))

/** Runs export `orders` from memory to memory as NDJSON; returns the result, the sink and the exported rows. */
const run = async (transforms: Readonly<Record<string, BatchTransform>>) => {
  const source = memorySource({ schema, rows })
  const sink = memorySink()
  const [result] = await runExports(
    {
      source: { type: "memory" },
      exports: [{ name: "orders", table: "orders", format: "ndjson", batch_size: 10, destination: { type: "memory" } }]
    },
    { configDir, plugins: [source.plugin, sink.plugin], transforms }
  )
  const part = sink.objects().get(result!.parts[0]!.path)!
  const lines = Buffer.from(part).toString("utf8").trim().split("\n")
  return { result: result!, sink, exported: lines.map((line) => JSON.parse(line) as Record<string, unknown>) }
}

describe("transforms (RunExportsOptions.transforms)", () => {
  it("mapRows drops rows (null) and adds columns declared from the source schema", async () => {
    const { result, exported } = await run({
      orders: mapRows(
        (row) => (row["status"] === "test" ? null : { ...row, doubled: (row["id"] as bigint) * 2n }),
        (input) => ({ columns: [...input.columns, { name: "doubled", type: { kind: "int64" } }] })
      )
    })
    expect(result.rows).toBe(20)
    expect(result.manifest?.schema.map((column) => column.name)).toEqual(["id", "status", "doubled"])
    expect(exported[0]).toEqual({ id: "1", status: "live", doubled: "2" })
    expect(exported.some((row) => row["status"] === "test")).toBe(false)
  })

  it("a Stream-level transform (Effect users) sees the source's typed batches", async () => {
    const upper: BatchTransform = ({ schema: input, batches }) => ({
      schema: input,
      batches: batches.pipe(
        Stream.mapEffect((batch) =>
          Effect.sync(() =>
            makeBatch(input, [
              columnValues(batch.columns[0]!, input.columns[0]!.type),
              columnValues(batch.columns[1]!, input.columns[1]!.type).map((value) => String(value).toUpperCase())
            ])
          )
        )
      )
    })
    const { exported } = await run({ orders: upper })
    expect(exported.map((row) => row["status"])).toEqual(rows.map((row) => row.status.toUpperCase()))
  })

  it("mapRows without an output schema keeps the source's columns; missing keys are NULL", async () => {
    const { exported } = await run({ orders: mapRows((row) => ({ id: row["id"] ?? null })) })
    expect(exported[3]).toEqual({ id: "3", status: null })
  })

  it("a row function that throws fails the export with a PluginError; nothing is published", async () => {
    const source = memorySource({ schema, rows })
    const sink = memorySink()
    const error = await runExports(
      { source: { type: "memory" }, exports: [{ name: "orders", table: "orders", format: "csv", destination: { type: "memory" } }] },
      {
        configDir,
        plugins: [source.plugin, sink.plugin],
        transforms: {
          orders: mapRows((row) => {
            if (row["id"] === 7n) throw new Error("no sevens")
            return row
          })
        }
      }
    ).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PluginError)
    expect((error as PluginError).message).toBe("the row function of a transform failed: no sevens")
    expect([...sink.objects().keys()]).toEqual([])
    expect(sink.pendingUploads()).toBe(0)
  })

  it("a transform for an export the config does not have is a ConfigError with a did-you-mean", async () => {
    const error = await run({ ordres: mapRows((row) => row) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect(error).toMatchObject({ path: "transforms.ordres", hint: "did you mean 'orders'?" })
  })

  it("mapRows refuses a key that is not an output column (here: added without an output schema)", async () => {
    const error = await run({ orders: mapRows((row) => ({ ...row, doubled: 2n })) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PluginError)
    expect(error).toMatchObject({
      plugin: "mapRows",
      message: 'a mapRows transform returned a row with the key "doubled", which is not an output column (id, status)'
    })
    expect((error as PluginError).hint).toContain("declare the column in mapRows's second argument")
  })

  it("mapRows names the column and the value of the wrong type, not the source", async () => {
    const error = await run({ orders: mapRows((row) => ({ ...row, id: Number(row["id"]) })) }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(PluginError)
    expect((error as PluginError).message).toMatch(/^a mapRows transform returned a value of the wrong type: column "id" \(int64\), row 1: expected a bigint, got number 0$/)
    expect((error as PluginError).hint).toContain("declare another type for the column in mapRows's output schema")
    // The value is the row's: marked as quoted, so telemetry gets the message without it.
    expect((error as PluginError).quoted).toEqual(['column "id" (int64), row 1: expected a bigint, got number 0'])
  })

  it("a config loadConfig checked runs as is (runExports(await loadConfig(…)))", async () => {
    const source = memorySource({ schema, rows })
    const sink = memorySink()
    const plugins = [source.plugin, sink.plugin]
    const loaded = await Effect.runPromise(
      loadConfig(
        { source: { type: "memory" }, exports: [{ name: "orders", table: "orders", format: "csv", destination: { type: "memory" } }] },
        { configDir, plugins }
      )
    )
    const [result] = await runExports(loaded, { configDir, plugins })
    expect(result?.rows).toBe(25)
  })

  it("an Effect transform uses the program's service and fails with the program's error; a provided ProgressReporter is used", async () => {
    class Multiplier extends Context.Tag("test/Multiplier")<Multiplier, { readonly factor: bigint }>() {}
    class Refused extends Data.TaggedError("Refused")<{ readonly id: bigint }> {}
    const scaled: BatchTransform<Refused, Multiplier> = ({ schema: input, batches }) => ({
      schema: input,
      batches: Stream.mapEffect(batches, (batch) =>
        Effect.gen(function* () {
          const { factor } = yield* Multiplier
          const ids = columnValues(batch.columns[0]!, input.columns[0]!.type) as ReadonlyArray<bigint>
          if (ids.includes(13n) && factor < 0n) return yield* new Refused({ id: 13n })
          return makeBatch(input, [ids.map((id) => id * factor), columnValues(batch.columns[1]!, input.columns[1]!.type)])
        })
      )
    })
    const started: Array<string> = []
    const reporter = Layer.succeed(ProgressReporter, {
      started: (live) => Effect.sync(() => void started.push(live.exportName)),
      tick: () => Effect.void,
      finished: () => Effect.void,
      notice: () => Effect.void,
      intervalMs: 60_000
    })
    const runWith = (factor: bigint) => {
      const source = memorySource({ schema, rows })
      const sink = memorySink()
      const program = runExportsEffect(
        { source: { type: "memory" }, exports: [{ name: "orders", table: "orders", format: "ndjson", destination: { type: "memory" } }] },
        { configDir, plugins: [source.plugin, sink.plugin], transforms: { orders: scaled } }
      )
      expectTypeOf(program).toEqualTypeOf<
        Effect.Effect<ReadonlyArray<ExportRun<Refused>>, ConfigError | SourceError | StateError | PluginError, Multiplier>
      >()
      return Effect.runPromise(program.pipe(Effect.provideService(Multiplier, { factor }), Effect.provide(reporter))).then(
        (runs) => ({ runs, sink })
      )
    }
    const { runs, sink } = await runWith(3n)
    expect(runs[0]?._tag).toBe("success")
    const part = sink.objects().get((runs[0] as Extract<ExportRun, { _tag: "success" }>).result.parts[0]!.path)!
    expect(Buffer.from(part).toString("utf8").split("\n")[2]).toBe('{"id":"6","status":"live"}')
    expect(started).toEqual(["orders"])
    const refused = await runWith(-1n)
    const failure = refused.runs[0] as Extract<ExportRun<Refused>, { _tag: "failure" }>
    expect(failure._tag).toBe("failure")
    expect(failure.error).toBeInstanceOf(Refused)
    expect(refused.sink.objects().size).toBe(0)
  })

  it("batchToRows / makeBatch round-trip, as mapRows relies on", () => {
    const batch = makeBatch(schema, [[1n, 2n], ["a", "b"]])
    expect(batchToRows(batch)).toEqual([
      { id: 1n, status: "a" },
      { id: 2n, status: "b" }
    ])
  })
})
