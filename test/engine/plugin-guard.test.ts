import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import csvFormat from "../../src/plugins/formats/csv/index.js"
import { PluginError, runExports } from "../../src/index.js"
import {
  type AnyPlugin,
  defineFormat,
  defineSink,
  defineSource,
  FormatDriver,
  type FormatDriverShape,
  type PartEncoder,
  SinkDriver,
  type SinkDriverShape,
  SourceDriver,
  type SourceDriverShape,
  type UploadHandle
} from "../../src/core/plugin.js"
import { memorySink, memorySource } from "../../src/testing/memory.js"

/**
 * Every call into a plugin is guarded (src/engine/plugin-guard.ts): per operation, a synchronous throw, a rejected
 * Promise (an `async` function where an Effect was due) and a defect inside the returned Effect each fail the export
 * with a PluginError naming the plugin, the operation and the export — never an unhandled rejection — and nothing
 * is published.
 */
type Misbehaviour = "throw" | "reject" | "defect"
const MISBEHAVIOURS: ReadonlyArray<Misbehaviour> = ["throw", "reject", "defect"]
const WHAT: Record<Misbehaviour, string> = { throw: "threw", reject: "rejected", defect: "failed unexpectedly" }

/** A function that misbehaves as asked, in place of a plugin operation. */
const broken =
  (how: Misbehaviour, operation: string) =>
  (): never => {
    const error = new Error(`boom in ${operation}`)
    if (how === "throw") throw error
    return (how === "reject" ? Promise.reject(error) : Effect.die(error)) as never
  }

const schema = { columns: [{ name: "id", type: { kind: "int64" } }] } as const
const rows = Array.from({ length: 30 }, (_, i) => ({ id: BigInt(i) }))
const configDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-guard-"))
afterAll(() => fs.rmSync(configDir, { recursive: true, force: true }))

const source = memorySource({ schema, rows })
const driverOf = <I, S>(layer: Layer.Layer<I, unknown>, tag: Context.Tag<I, S>) =>
  Effect.runSync(Effect.scoped(Layer.build(layer)).pipe(Effect.map((context) => Context.get(context, tag))))

/** Runs export `items` (memory source → `format` → memory sink) and returns the error it failed with. */
const failureOf = async (plugins: { source?: AnyPlugin; format?: AnyPlugin; sink?: AnyPlugin }) => {
  const sink = memorySink()
  const error = await runExports(
    {
      source: { type: plugins.source?.type ?? "memory" },
      exports: [
        { name: "items", table: "items", format: plugins.format?.type ?? "csv", batch_size: 10, destination: { type: plugins.sink?.type ?? "memory" } }
      ]
    },
    { configDir, plugins: [plugins.source ?? source.plugin, plugins.sink ?? sink.plugin, ...(plugins.format ? [plugins.format] : [])] }
  ).then(
    () => undefined,
    (e: unknown) => e
  )
  return { error, published: [...sink.objects().keys()], pending: sink.pendingUploads() }
}

const expectNamed = (error: unknown, kind: string, type: string, operation: string, how: Misbehaviour) => {
  expect(error).toBeInstanceOf(PluginError)
  expect((error as PluginError).message).toBe(
    `the ${kind} plugin '${type}' ${WHAT[how]} in ${operation} (export 'items'): boom in ${operation.split(" ").pop()}`
  )
}

const sourceWith = (type: string, patch: (driver: SourceDriverShape) => SourceDriverShape) =>
  defineSource({
    type,
    config: source.plugin.config,
    make: (config, context) =>
      Layer.succeed(SourceDriver, patch(driverOf(source.plugin.make(config, context), SourceDriver)))
  })

const formatWith = (type: string, patch: (driver: FormatDriverShape) => FormatDriverShape) =>
  defineFormat({
    type,
    config: csvFormat.config,
    make: (config, context) => Layer.succeed(FormatDriver, patch(driverOf(csvFormat.make(config, context), FormatDriver)))
  })

const sinkWith = (type: string, patch: (driver: SinkDriverShape) => SinkDriverShape) => {
  const base = memorySink({ blockSize: 16 })
  return defineSink({
    type,
    config: base.plugin.config,
    make: (config, context) => Layer.succeed(SinkDriver, patch(driverOf(base.plugin.make(config, context), SinkDriver)))
  })
}

describe("calls into plugins are guarded", () => {
  describe.each(MISBEHAVIOURS)("%s", (how) => {
    it("source make / open / reading rows", async () => {
      // A defect in make: a layer whose construction dies. A Promise is not a Layer.
      const makeLayer = how === "defect" ? () => Layer.effect(SourceDriver, Effect.die(new Error("boom in make"))) : broken(how, "make")
      const refused = await failureOf({ source: defineSource({ type: "bad-make", config: source.plugin.config, make: makeLayer }) })
      expect(refused.error).toBeInstanceOf(PluginError)
      expect((refused.error as PluginError).message).toContain(
        how === "reject" ? "the source plugin 'bad-make' returned a Promise, not a Layer in make" : `the source plugin 'bad-make' ${WHAT[how]} in make`
      )
      const open = await failureOf({ source: sourceWith("bad-open", (driver) => ({ ...driver, open: broken(how, "open") })) })
      expect((open.error as PluginError).message).toContain(`the source plugin 'bad-open' ${WHAT[how]} in open`)
      if (how !== "reject") {
        const reading = await failureOf({
          source: sourceWith("bad-rows", (driver) => ({
            ...driver,
            open: (query) =>
              Effect.map(driver.open(query), (result) => ({
                ...result,
                batches: how === "throw" ? Stream.map(result.batches, broken(how, "rows")) : Stream.mapEffect(result.batches, broken(how, "rows"))
              }))
          }))
        })
        expect((reading.error as PluginError).message).toContain("the source plugin 'bad-rows' failed unexpectedly in open (reading rows)")
        expect(reading.published).toEqual([])
      }
    })

    it("format open / encoder write / encoder finish", async () => {
      const open = await failureOf({ format: formatWith("bad-open", (driver) => ({ ...driver, open: broken(how, "open") })) })
      expectNamed(open.error, "format", "bad-open", "open", how)
      const withEncoder = (type: string, patch: (encoder: PartEncoder) => PartEncoder) =>
        formatWith(type, (driver) => ({ ...driver, open: (s, part) => Effect.map(driver.open(s, part), patch) }))
      const write = await failureOf({ format: withEncoder("bad-write", (encoder) => ({ ...encoder, write: broken(how, "write") })) })
      expectNamed(write.error, "format", "bad-write", "encoder write", how)
      expect(write.published).toEqual([])
      if (how !== "throw") {
        const finish = await failureOf({
          format: withEncoder("bad-finish", (encoder) => ({ ...encoder, finish: broken(how, "finish")() }))
        })
        expectNamed(finish.error, "format", "bad-finish", "encoder finish", how)
        expect(finish.published).toEqual([])
      }
    })

    it("sink begin / writeBlock / complete / put", async () => {
      const begin = await failureOf({ sink: sinkWith("bad-begin", (driver) => ({ ...driver, begin: broken(how, "begin") })) })
      expectNamed(begin.error, "sink", "bad-begin", "begin", how)
      const withHandle = (type: string, patch: (handle: UploadHandle) => UploadHandle) =>
        sinkWith(type, (driver) => ({ ...driver, begin: (key, contentType) => Effect.map(driver.begin(key, contentType), patch) }))
      for (const operation of ["writeBlock", "complete"] as const) {
        const { error } = await failureOf({ sink: withHandle(`bad-${operation}`, (handle) => ({ ...handle, [operation]: broken(how, operation) })) })
        expectNamed(error, "sink", `bad-${operation}`, operation, how)
      }
      const put = await failureOf({ sink: sinkWith("bad-put", (driver) => ({ ...driver, put: broken(how, "put") })) })
      expectNamed(put.error, "sink", "bad-put", "put", how)
    })
  })
})
