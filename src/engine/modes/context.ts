import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { StateStoreShape } from "../../state/store.js"
import type { BatchSchema } from "../../core/batch.js"
import type { ExportConfig } from "../../config/model.js"
import { ConfigError, type RivetError, type SourceError } from "../../core/errors.js"
import { maskedSchema } from "../masking.js"
import { withMetaColumns } from "../meta-columns.js"
import type { ChunkRunner } from "./chunk-work.js"
import type { QueryBase, SharedReader, SourceDescription, SourceQuery } from "../../core/plugin.js"
import type { UnitContext } from "./unit-context.js"
import type { WorkerJoin } from "../worker-join.js"
import type { RunIdentity } from "./run-identity.js"

/** Everything one export's run works with: what its units need, and the run's own state, clock and lanes. */
export interface ExportContext extends Omit<UnitContext, "lane"> {
  readonly state: StateStoreShape
  /** The fiber's Clock, for synchronous callbacks (see `dateReader`). */
  readonly now: () => Date
  /** The export runs continuously (`rivet run --follow`): this run reads one window, ending early once `stop` aborts. */
  readonly follow?: { readonly stop: AbortSignal } | undefined
  /**
   * The exports of the config whose mode reads the same shared resource as this one (`ExportMode.sharedRead`), this
   * one included, in config order; they run side by side. Absent: the export reads alone.
   */
  readonly sharing?: ReadonlyArray<SharedReader> | undefined
  /** `rivet run --worker`: this process shares the run's units with other workers through the state store. */
  readonly worker?: WorkerJoin | undefined
  /**
   * What a checkpointed run records of its source and output settings, and a join or resume must match; absent only
   * where nothing is journaled (`rivet plan`).
   */
  readonly identity?: RunIdentity | undefined
  /**
   * Where chunked mode runs its chunks, `lanes` at a time: worker threads when the run allows it
   * (src/engine/lanes), else — and when absent — this thread; with `overlap`, a lane takes its next chunk as soon as
   * the one before is read. Lives as long as the given scope.
   */
  readonly chunkRunner?:
    | ((lanes: number, overlap: boolean) => Effect.Effect<ChunkRunner, RivetError, Scope.Scope>)
    | undefined
}

/** The export's table or its own query, for the source to render in its dialect. */
export const queryBaseOf = (spec: Pick<ExportConfig, "query" | "table">): QueryBase =>
  spec.query !== undefined ? { _tag: "Query", sql: spec.query } : { _tag: "Table", ...spec.table! }

/** The export's base query, before a mode adds its filters, order and limit. */
export const baseQuery = (spec: ExportConfig): SourceQuery => ({
  exportName: spec.name,
  base: queryBaseOf(spec),
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
  const masked = maskedSchema(ctx.spec, sourceSchema)
  if (masked instanceof ConfigError) return Effect.fail(masked)
  const transformed = ctx.spec.transform
    ? ctx.spec.transform({ schema: masked, batches: Stream.empty as Stream.Stream<never, SourceError> }).schema
    : masked
  const output = withMetaColumns(ctx.spec, transformed)
  return output instanceof ConfigError ? Effect.fail(output) : Effect.succeed(output)
}
