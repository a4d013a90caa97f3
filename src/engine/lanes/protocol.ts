import { WorkerError } from "@effect/platform/WorkerError"
import * as Schema from "effect/Schema"
import type { BatchSchema, LogicalType } from "../../core/batch.js"
import { PartRecord } from "../../core/manifest.js"
import type { ColumnRef, RowFilter, SourceQuery } from "../../core/plugin.js"
import type { ChunkWork } from "../modes/chunk-work.js"
import type { UnitOutcome } from "../modes/unit.js"
import { AnyRivetError } from "./errors.js"

// The requests the main thread sends a lane's worker thread, as Schemas: @effect/platform's Worker encodes each
// request, its stream of results and its tagged error on one side and decodes them on the other.

const LogicalTypeWire: Schema.Schema<LogicalType> = Schema.Union(
  Schema.Struct({
    kind: Schema.Literal(
      "int16",
      "int32",
      "int64",
      "float32",
      "float64",
      "string",
      "bool",
      "date",
      "time",
      "timestamp",
      "timestamptz",
      "uuid",
      "json",
      "bytes",
      "interval"
    )
  }),
  Schema.Struct({ kind: Schema.Literal("decimal"), precision: Schema.Number, scale: Schema.Number }),
  Schema.Struct({ kind: Schema.Literal("list"), element: Schema.suspend(() => LogicalTypeWire) })
)

const BatchSchemaWire: Schema.Schema<BatchSchema> = Schema.Struct({
  columns: Schema.Array(
    Schema.Struct({ name: Schema.String, type: LogicalTypeWire, sourceType: Schema.optionalWith(Schema.String, { exact: true }) })
  )
})

const ColumnRefWire: Schema.Schema<ColumnRef> = Schema.Union(
  Schema.String,
  Schema.TaggedStruct("Coalesce", { columns: Schema.Array(Schema.String) })
)

const RowFilterWire: Schema.Schema<RowFilter> = Schema.Union(
  Schema.TaggedStruct("Between", { column: Schema.String, low: Schema.String, high: Schema.String }),
  Schema.TaggedStruct("IsNull", { column: Schema.String }),
  Schema.TaggedStruct("After", { columns: Schema.Array(ColumnRefWire), values: Schema.Array(Schema.String) }),
  Schema.TaggedStruct("AtLeast", { column: Schema.String, value: Schema.String }),
  Schema.TaggedStruct("AtMost", { column: ColumnRefWire, value: Schema.String })
)

const SourceQueryWire: Schema.Schema<SourceQuery> = Schema.Struct({
  exportName: Schema.String,
  base: Schema.Union(
    Schema.TaggedStruct("Table", { schema: Schema.optional(Schema.String), name: Schema.String }),
    Schema.TaggedStruct("Query", { sql: Schema.String })
  ),
  where: Schema.optional(Schema.Array(RowFilterWire)),
  orderBy: Schema.optional(Schema.Array(ColumnRefWire)),
  limit: Schema.optional(Schema.Number),
  uniqueOrder: Schema.optional(Schema.Boolean),
  distinct: Schema.optional(Schema.Array(Schema.String)),
  batchSize: Schema.Number,
  // A Map crosses the thread boundary as it is (structured clone).
  columnTypes: Schema.ReadonlyMapFromSelf({ key: Schema.String, value: LogicalTypeWire })
})

const ChunkWorkWire: Schema.Schema<ChunkWork> = Schema.Struct({
  query: SourceQueryWire,
  naming: Schema.Struct({
    exportName: Schema.String,
    runStartedAt: Schema.String,
    chunk: Schema.Number,
    nonce: Schema.String,
    extension: Schema.String,
    sizeSplit: Schema.Boolean
  }),
  runId: Schema.String
})

const UnitStatsWire = Schema.Struct({ rows: Schema.Number, bytes: Schema.Number, parts: Schema.Number, retries: Schema.Number })

const UnitOutcomeWire: Schema.Schema<UnitOutcome> = Schema.Struct({
  parts: Schema.Array(PartRecord),
  rows: Schema.Number,
  sourceRows: Schema.Number,
  schema: BatchSchemaWire,
  last: Schema.Array(Schema.UndefinedOr(Schema.String)),
  stats: UnitStatsWire,
  timings: Schema.Struct({ sourceWaitMs: Schema.Number, encodeMs: Schema.Number, uploadMs: Schema.Number, totalMs: Schema.Number })
})

/** What a worker thread starts a lane with. */
export const LaneInit = Schema.Struct({
  /** The config file the main thread loaded; the worker reads it again with the same environment. */
  configFile: Schema.String,
  env: Schema.Record({ key: Schema.String, value: Schema.UndefinedOr(Schema.String) }),
  exportName: Schema.String,
  /** The lane's number (1, 2, …): its metrics are tagged `lane-N`. */
  lane: Schema.Number,
  retry: Schema.Struct({ maxRetries: Schema.Number, initialDelayMs: Schema.Number, maxDelayMs: Schema.Number }),
  /**
   * What the main thread built from that file. A worker that builds anything else (the file was edited since)
   * refuses to start rather than write somewhere or something else.
   */
  expect: Schema.Struct({
    sinkUri: Schema.String,
    extension: Schema.String,
    compression: Schema.String,
    maxFileSize: Schema.UndefinedOr(Schema.Number)
  })
})
export type LaneInit = typeof LaneInit.Type

/** The running chunk's totals so far (values, never differences: the main thread keeps the latest). */
export const ChunkProgress = Schema.TaggedStruct("Progress", UnitStatsWire.fields)
export type ChunkProgress = typeof ChunkProgress.Type

/** What a running chunk tells the main thread, in order; `Done` is the last. */
export const ChunkEvent = Schema.Union(
  ChunkProgress,
  /** The chunk's output schema, to check against the export's baseline (schema drift) before anything is written. */
  Schema.TaggedStruct("CheckSchema", { schema: BatchSchemaWire }),
  /** What the worker's `runUnit` told its progress reporter, for the main thread's. */
  Schema.TaggedStruct("PartCommitted", { part: PartRecord }),
  Schema.TaggedStruct("Notice", { message: Schema.String }),
  /** The chunk's last row is read and its result closed: the lane may take its next chunk while this one finishes. */
  Schema.TaggedStruct("SourceEnded", {}),
  Schema.TaggedStruct("Done", { outcome: UnitOutcomeWire })
)
export type ChunkEvent = typeof ChunkEvent.Type

/** Sent once when the thread starts: it loads the config and builds the export's drivers. */
export class OpenLane extends Schema.TaggedRequest<OpenLane>()("InitialMessage", {
  failure: AnyRivetError,
  success: Schema.Void,
  payload: { init: LaneInit }
}) {}

/** The main thread's span a chunk's spans join (the run's trace), when telemetry is on. */
export const TraceParent = Schema.Struct({ traceId: Schema.String, spanId: Schema.String, sampled: Schema.Boolean })
export type TraceParent = typeof TraceParent.Type

/** Runs one chunk; interrupting the request interrupts the chunk (uploads aborted, temp files removed). */
export class RunChunk extends Schema.TaggedRequest<RunChunk>()("RunChunk", {
  failure: Schema.Union(AnyRivetError, WorkerError),
  success: ChunkEvent,
  payload: { work: ChunkWorkWire, parent: Schema.optional(TraceParent) }
}) {}

/** The main thread's answer to the running chunk's `CheckSchema`: no error means the schema may be written. */
export class SchemaChecked extends Schema.TaggedRequest<SchemaChecked>()("SchemaChecked", {
  failure: Schema.Never,
  success: Schema.Void,
  payload: { error: Schema.optional(AnyRivetError) }
}) {}

export const LaneRequest = Schema.Union(OpenLane, RunChunk, SchemaChecked)
export type LaneRequest = typeof LaneRequest.Type
