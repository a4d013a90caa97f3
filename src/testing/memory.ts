import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Batch, BatchSchema, Value } from "../core/batch.js"
import { makeBatch } from "../core/batch.js"
import { SinkError, SourceError } from "../core/errors.js"
import type { SinkErrorReason } from "../core/errors.js"
import { defineSink, defineSource, SinkDriver, SourceDriver, tableOf } from "../core/plugin.js"
import type { SinkDriverShape, SinkPlugin, SourcePlugin, SourceQuery, StoredObject } from "../core/plugin.js"
import * as Sink from "../core/sink/index.js"
import type { RawUpload } from "../core/sink/index.js"

/** Neither in-memory plugin takes config keys (an empty Struct would accept any key). */
const EmptyConfig = Schema.Record({
  key: Schema.String,
  value: Schema.Never.annotations({ message: () => "unknown key: the memory plugins take no keys" })
})

// ── Source ─────────────────────────────────────────────────────────────────

/** One in-memory table: ready-made batches, or rows (objects keyed by column name) plus their schema. */
export type MemoryTable =
  | { readonly batches: ReadonlyArray<Batch>; readonly schema?: BatchSchema }
  | { readonly schema: BatchSchema; readonly rows: ReadonlyArray<Readonly<Record<string, Value>>> }

export interface MemorySourceOptions {
  /** The plugin's `type` (default `memory`). */
  readonly type?: string
  /** Ends every result with `error` after this many batches, to test failure handling. */
  readonly failAfterBatches?: number
  readonly error?: SourceError
}

export interface MemorySource {
  readonly plugin: SourcePlugin<typeof EmptyConfig.Type, typeof EmptyConfig.Encoded>
  readonly layer: Layer.Layer<SourceDriver>
  /** Every query opened so far, in order. */
  readonly queries: () => ReadonlyArray<SourceQuery>
}

const isTables = (
  data: MemoryTable | { readonly tables: Readonly<Record<string, MemoryTable>> }
): data is { readonly tables: Readonly<Record<string, MemoryTable>> } => "tables" in data

const batchesOf = (table: MemoryTable, batchSize: number): { schema: BatchSchema; batches: Array<Batch> } => {
  if ("batches" in table) {
    return { schema: table.schema ?? table.batches[0]?.schema ?? { columns: [] }, batches: [...table.batches] }
  }
  const { schema, rows } = table
  const batches: Array<Batch> = []
  for (let start = 0; start < rows.length; start += Math.max(1, batchSize)) {
    const slice = rows.slice(start, start + Math.max(1, batchSize))
    batches.push(makeBatch(schema, schema.columns.map((column) => slice.map((row) => row[column.name] ?? null))))
  }
  return { schema, batches }
}

/**
 * A source serving data from memory. Give one table (every query returns it) or `{ tables }`, looked up by the
 * query's table name, else its export name. Rows are cut into batches of the query's `batchSize`; ready-made
 * batches are served as given. The SQL and `columnTypes` are ignored.
 */
export const memorySource = (
  data: MemoryTable | { readonly tables: Readonly<Record<string, MemoryTable>> },
  options: MemorySourceOptions = {}
): MemorySource => {
  const opened: Array<SourceQuery> = []
  const driver = {
    label: "Memory",
    displayUrl: "memory:",
    check: Effect.void,
    open: (query: SourceQuery) =>
      Effect.suspend(() => {
        opened.push(query)
        const name = tableOf(query)?.name ?? query.exportName
        const table = isTables(data) ? data.tables[name] : data
        if (table === undefined) {
          const known = isTables(data) ? Object.keys(data.tables).join(", ") : ""
          return Effect.fail(
            new SourceError({ source: "memory", message: `no table named ${name} (known: ${known})`, retryable: false })
          )
        }
        const { schema, batches } = batchesOf(table, query.batchSize)
        const failAfter = options.failAfterBatches
        const stream =
          failAfter === undefined
            ? Stream.fromIterable(batches)
            : Stream.concat(
                Stream.fromIterable(batches.slice(0, failAfter)),
                Stream.fail(
                  options.error ??
                    new SourceError({ source: "memory", message: "injected failure", retryable: false })
                )
              )
        return Effect.succeed({ schema, batches: stream })
      })
  }
  const layer = Layer.succeed(SourceDriver, driver)
  return {
    plugin: defineSource({
      type: options.type ?? "memory",
      description: "Rows held in memory (tests and examples)",
      config: EmptyConfig,
      make: () => layer
    }),
    layer,
    queries: () => [...opened]
  }
}

// ── Sink ───────────────────────────────────────────────────────────────────

/** One call the memory sink received, as recorded by `calls()` and passed to `failWith`. */
export interface MemorySinkCall {
  readonly operation: "check" | "put" | "begin" | "writeBlock" | "complete" | "abort" | "list"
  readonly key?: string
  /** Block index for `writeBlock`, block count for `complete`. */
  readonly index?: number
}

export interface MemorySinkOptions {
  readonly type?: string
  /** Default 64 KiB. */
  readonly blockSize?: number
  /** Default 4. */
  readonly concurrency?: number
  /** Default true. */
  readonly markers?: boolean
  /** Return an error to make that call fail instead of running (to test retries and aborts). */
  readonly failWith?: (call: MemorySinkCall) => SinkError | undefined
}

export interface MemorySink {
  readonly plugin: SinkPlugin<typeof EmptyConfig.Type, typeof EmptyConfig.Encoded>
  readonly layer: Layer.Layer<SinkDriver>
  readonly driver: SinkDriverShape
  /** Completed objects by key (a copy). */
  readonly objects: () => Map<string, Uint8Array>
  /** Uploads begun and neither completed nor aborted. */
  readonly pendingUploads: () => number
  /** Every call received, in order. */
  readonly calls: () => ReadonlyArray<MemorySinkCall>
}

const sinkError = (operation: string, key: string | undefined, reason: SinkErrorReason, message: string) =>
  new SinkError({ plugin: "memory", operation, ...(key === undefined ? {} : { key }), reason, message, retryable: false })

/** A sink keeping objects in memory, on `Sink.make`: the framework enforces the upload contract strictly. */
export const memorySink = (options: MemorySinkOptions = {}): MemorySink => {
  const blockSize = options.blockSize ?? 64 * 1024
  const stored = new Map<string, Uint8Array>()
  const pending = new Set<object>()
  const received: Array<MemorySinkCall> = []

  const call = (entry: MemorySinkCall): Effect.Effect<void, SinkError> =>
    Effect.suspend(() => {
      received.push(entry)
      const injected = options.failWith?.(entry)
      return injected === undefined ? Effect.void : Effect.fail(injected)
    })

  // Each block's receipt is a copy of its bytes: the framework keeps them until complete.
  const begin = (key: string): RawUpload<Uint8Array> => {
    const token = {}
    pending.add(token)
    return {
      writePart: (index, bytes) => Effect.as(call({ operation: "writeBlock", key, index }), bytes.slice()),
      complete: (blocks, size) =>
        Effect.zipRight(
          call({ operation: "complete", key, index: blocks.length }),
          Effect.sync(() => {
            stored.set(key, Sink.concatParts(blocks, size))
            pending.delete(token)
          })
        ),
      abort: Effect.zipRight(
        call({ operation: "abort", key }),
        Effect.sync(() => void pending.delete(token))
      )
    }
  }

  const driver = Sink.make({
    spanPrefix: "MemorySink",
    label: "Memory",
    uri: (key) => (key === undefined ? "memory:" : `memory:${key}`),
    capabilities: { markers: options.markers ?? true, blockSize, concurrency: options.concurrency ?? 4, releasesBytes: true },
    usageError: Sink.usageErrors("memory", (problem) => ({ ...problem, message: `${problem.key}: ${problem.message}` })),
    check: call({ operation: "check" }),
    probe: false,
    put: (key, bytes) =>
      call({ operation: "put", key }).pipe(Effect.zipRight(Effect.sync(() => void stored.set(key, bytes.slice())))),
    begin: (key) => Effect.map(call({ operation: "begin", key }), () => begin(key)),
    list: call({ operation: "list" }).pipe(
      Effect.map((): ReadonlyArray<StoredObject> =>
        [...stored].map(([key, bytes]) => ({ key, size: bytes.length })).sort((a, b) => (a.key < b.key ? -1 : 1))
      )
    ),
    read: (key) =>
      Stream.suspend(() => {
        const bytes = stored.get(key)
        return bytes === undefined
          ? Stream.fail(sinkError("read", key, "NotFound", `no object ${key}`))
          : Stream.make(bytes)
      })
  })
  const layer = Layer.succeed(SinkDriver, driver)
  return {
    plugin: defineSink({
      type: options.type ?? "memory",
      description: "Objects held in memory (tests and examples)",
      config: EmptyConfig,
      make: () => layer
    }),
    layer,
    driver,
    objects: () => new Map(stored),
    pendingUploads: () => pending.size,
    calls: () => [...received]
  }
}
