import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { StateStoreShape } from "../../state/store.js"
import type { BatchSchema } from "../../core/batch.js"
import type { ExportConfig } from "../../config/model.js"
import { ConfigError, type RivetError, type SourceError } from "../../core/errors.js"
import { withMetaColumns } from "../meta-columns.js"
import type { ChunkRunner } from "./chunk-work.js"
import type { QualityGates } from "../quality/gates.js"
import type {
  FormatDriverShape,
  SinkDriverShape,
  SourceDescription,
  SourceDriverShape,
  SourceQuery
} from "../../core/plugin.js"
import type { ProgressReporterShape } from "../../core/progress.js"
import type { LiveProgress } from "../live-progress.js"
import type { RetryPolicy } from "../../core/retry.js"
import type { UploadLedger } from "../upload-cleanup.js"
import type { WorkerJoin } from "../worker-join.js"

/** Everything one export's run works with. */
export interface ExportContext {
  readonly spec: ExportConfig
  readonly source: SourceDriverShape
  readonly format: FormatDriverShape
  readonly sink: SinkDriverShape
  readonly reporter: ProgressReporterShape
  readonly state: StateStoreShape
  readonly progress: LiveProgress
  readonly retry: RetryPolicy
  /** The fiber's Clock, for synchronous callbacks (see `dateReader`). */
  readonly now: () => Date
  /** The export's quality gates, fed every batch written. */
  readonly gates?: QualityGates | undefined
  /** The keys and key prefixes this run may have begun uploads under, cleaned up when the export ends. */
  readonly uploads?: UploadLedger | undefined
  /** Checks an output schema against the export's baseline before anything is written (schema drift). */
  readonly checkSchema: (schema: BatchSchema) => Effect.Effect<void, RivetError>
  /** `rivet run --worker`: this process shares the run's units with other workers through the state store. */
  readonly worker?: WorkerJoin | undefined
  /**
   * Where chunked mode runs its chunks, `lanes` at a time: worker threads when the run allows it
   * (src/engine/lanes), else — and when absent — this thread; with `overlap`, a lane takes its next chunk as soon as
   * the one before is read. Lives as long as the given scope.
   */
  readonly chunkRunner?:
    | ((lanes: number, overlap: boolean) => Effect.Effect<ChunkRunner, RivetError, Scope.Scope>)
    | undefined
}

/** `SELECT * FROM "schema"."table"` for a table shortcut, or the export's own query. */
export const resolveSql = (spec: ExportConfig, defaultSchema?: string): string => {
  if (spec.query !== undefined) return spec.query
  const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`
  const table = spec.table!
  const schema = table.schema ?? defaultSchema
  return `SELECT * FROM ${schema ? `${quote(schema)}.` : ""}${quote(table.name)}`
}

/** The export's base query, before a mode adds its filters, order and limit. */
export const baseQuery = (spec: ExportConfig): SourceQuery => ({
  exportName: spec.name,
  sql: resolveSql(spec),
  table: spec.table,
  batchSize: spec.batchSize,
  columnTypes: spec.columnTypes
})

/** The planning primitives a mode needs; a source without them can only run `mode: full`. */
export const planningPrimitives = (ctx: ExportContext) => {
  const { describe, bounds } = ctx.source
  if (describe === undefined || bounds === undefined) {
    return Effect.fail(
      new ConfigError({
        path: `export '${ctx.spec.name}'.mode`,
        message: `the ${ctx.source.label} source cannot run mode: ${ctx.spec.mode.kind} (it cannot describe queries or read column bounds)`,
        hint: "use mode: full with this source"
      })
    )
  }
  return Effect.succeed({ describe, bounds })
}

/** Finds a column of a described query, failing with the columns it does have. */
export const requireColumn = (
  ctx: ExportContext,
  description: SourceDescription,
  column: string,
  key: string
): Effect.Effect<SourceDescription["schema"]["columns"][number], ConfigError> => {
  const found = description.schema.columns.find((candidate) => candidate.name === column)
  return found
    ? Effect.succeed(found)
    : Effect.fail(
        new ConfigError({
          path: `export '${ctx.spec.name}'.${key}`,
          message: `column '${column}' is not in the export's result`,
          hint: `the result has: ${description.schema.columns.map((c) => c.name).join(", ")}`
        })
      )
}

/**
 * The schema the export writes: the source's, or what the program's transform makes of it, followed by the meta
 * columns (`meta_columns:`) — failing when one of them would repeat a column's name.
 */
export const outputSchemaOf = (ctx: Pick<ExportContext, "spec">, sourceSchema: BatchSchema): Effect.Effect<BatchSchema, ConfigError> => {
  const transformed = ctx.spec.transform
    ? ctx.spec.transform({ schema: sourceSchema, batches: Stream.empty as Stream.Stream<never, SourceError> }).schema
    : sourceSchema
  const output = withMetaColumns(ctx.spec, transformed)
  return output instanceof ConfigError ? Effect.fail(output) : Effect.succeed(output)
}
