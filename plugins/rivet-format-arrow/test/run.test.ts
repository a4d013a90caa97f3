import * as Effect from "effect/Effect"
import * as Tracer from "effect/Tracer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { threadId } from "node:worker_threads"
import { runExports, runExportsEffect } from "rivet-export"
import type { LogicalType } from "rivet-export/plugin"
import { memorySink, memorySource } from "rivet-export/testing"
import { afterEach, describe, expect, it } from "vitest"
import { readArrow } from "./read-arrow.js"

const PLUGIN_DIR = path.resolve(import.meta.dirname, "..")

const types = {
  id: { kind: "int64" },
  amount: { kind: "decimal", precision: 10, scale: 2 },
  at: { kind: "timestamptz" },
  note: { kind: "string" }
} satisfies Record<string, LogicalType>
const rows = Array.from({ length: 2500 }, (_, i) => ({
  id: BigInt(i),
  amount: `${i}.${String(i % 100).padStart(2, "0")}`,
  at: 1_700_000_000_000_000n + BigInt(i),
  note: i % 7 === 0 ? null : `note ${i}`
}))
const schema = { columns: Object.entries(types).map(([name, type]) => ({ name, type })) }

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** A config of one export from memory to memory, loading this package by its directory, and its sink. */
const setUp = (exportKeys: Record<string, unknown>) => {
  const configDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-arrow-run-"))
  dirs.push(configDir)
  const source = memorySource({ schema, rows })
  const sink = memorySink({ blockSize: 8 * 1024 })
  const config = {
    plugins: [PLUGIN_DIR],
    source: { type: "memory" },
    exports: [{ name: "orders", table: "orders", format: "arrow", batch_size: 500, destination: { type: "memory" }, ...exportKeys }]
  }
  return { config, options: { configDir, plugins: [source.plugin, sink.plugin] }, sink }
}

/** Runs one export through Rivet's runtime. */
const run = async (exportKeys: Record<string, unknown>) => {
  const { config, options, sink } = setUp(exportKeys)
  const [result] = await runExports(config, options)
  return { result: result!, objects: sink.objects() }
}

/** Runs one export with a tracer that keeps every span the run opens, and returns them with the result. */
const traced = async (exportKeys: Record<string, unknown>, encoderThread?: boolean) => {
  const { config, options, sink } = setUp(exportKeys)
  const spans: Array<Tracer.Span> = []
  const runs = await Effect.runPromise(
    Effect.flatMap(Effect.tracer, (inner) =>
      runExportsEffect(config, { ...options, ...(encoderThread === undefined ? {} : { encoderThread }) }).pipe(
        Effect.withTracer(
          Tracer.make({
            span: (name, parent, context, links, startTime, kind, spanOptions) => {
              const span = inner.span(name, parent, context, links, startTime, kind, spanOptions)
              spans.push(span)
              return span
            },
            context: (f, fiber) => inner.context(f, fiber)
          })
        )
      )
    )
  )
  const [outcome] = runs
  if (outcome?._tag !== "success") throw new Error(`the export failed: ${JSON.stringify(outcome)}`)
  return { result: outcome.result, objects: sink.objects(), spans }
}

describe("format: arrow through Rivet's runtime", () => {
  it("publishes one .arrow part, the manifest and _SUCCESS, and the file holds every row", async () => {
    const { result, objects } = await run({})
    expect(result.rows).toBe(rows.length)
    expect(result.parts).toHaveLength(1)
    expect(result.parts[0]!.path).toMatch(/^orders_\d{8}_\d{6}_\d{3}\.arrow$/)
    expect(result.manifest?.format).toBe("arrow")
    expect([...objects.keys()].sort()).toEqual(
      [result.parts[0]!.path, "_SUCCESS", `_manifests/${result.runId}.json`, "manifest.json"].sort()
    )
    const { table, columns } = readArrow(objects.get(result.parts[0]!.path)!, types)
    expect(table.batches).toHaveLength(5)
    for (const name of Object.keys(types)) {
      expect(columns[name], name).toEqual(rows.map((row) => row[name as keyof typeof row]))
    }
  })

  it("with max_file_size, every part is a complete Arrow file and together they hold the rows in order", async () => {
    const { result, objects } = await run({ max_file_size: "64KiB" })
    expect(result.parts.length).toBeGreaterThan(1)
    const ids = result.parts.flatMap((part) => {
      const { table, columns } = readArrow(objects.get(part.path)!, types)
      expect(table.numRows).toBe(part.rows)
      return columns["id"]!
    })
    expect(ids).toEqual(rows.map((row) => row.id))
  })

  // Nothing in this package starts a thread: it names its part encoders (`encoderThread`), and Rivet decides.
  it.skipIf(os.availableParallelism() < 2)("encodes its parts on an encoder thread Rivet runs, with the same bytes", async () => {
    const threaded = await traced({ max_file_size: "64KiB" })
    const finished = threaded.spans.filter((span) => span.name === "EncoderThread.finish")
    // One span per part the thread finished, each naming the thread that encoded it: a worker thread, not this one.
    expect(finished.length).toBeGreaterThan(1)
    expect(finished.length).toBe(threaded.result.parts.length)
    for (const span of finished) {
      expect(span.attributes.get("rivet.format")).toBe("arrow")
      const encodedBy = span.attributes.get("rivet.encoder.thread_id")
      expect(typeof encodedBy).toBe("number")
      expect(encodedBy).not.toBe(threadId)
    }
    const inline = await traced({ max_file_size: "64KiB" }, false)
    expect(inline.spans.filter((span) => span.name === "EncoderThread.finish")).toEqual([])
    const bytes = (run: { result: { parts: ReadonlyArray<{ path: string }> }; objects: ReadonlyMap<string, Uint8Array> }) =>
      run.result.parts.map((part) => Buffer.from(run.objects.get(part.path)!).toString("base64"))
    expect(bytes(threaded)).toEqual(bytes(inline))
  })

  it("rejects a key the format does not know, like a built-in format", async () => {
    await expect(run({ compression: "zstd" })).rejects.toMatchObject({
      _tag: "ConfigError",
      path: "exports[0].compression",
      message: "unknown key 'compression'"
    })
  })
})
