import * as Effect from "effect/Effect"
import type { BatchSchema } from "../../core/batch.js"
import type { ConfigError, SourceError } from "../../core/errors.js"
import type { PreparedMode } from "./mode.js"
import { schemaEntries } from "../../core/manifest.js"
import type { ModePlan } from "../plan/model.js"
import type { SourceQuery } from "../../core/plugin.js"
import { baseQuery, type ExportContext, outputSchemaOf } from "./context.js"
import { personalColumnsNotice } from "../masking.js"

/**
 * The statement a query runs, parameters inline, for plans and run reports. A source without `render` shows its
 * base (it can only run `mode: full`, which reads exactly that): the query, or the table's name.
 */
export const statementOf = (ctx: Pick<ExportContext, "source">, query: SourceQuery): string =>
  ctx.source.render?.(query) ??
  (query.base._tag === "Query" ? query.base.sql : `table ${query.base.schema === undefined ? "" : `${query.base.schema}.`}${query.base.name}`)

/** The source's row estimate for a query from its statistics; `null` when it cannot tell. */
export const estimateOf = (ctx: ExportContext, query: SourceQuery): Effect.Effect<number | null, SourceError> =>
  ctx.source.estimateRows
    ? Effect.map(ctx.source.estimateRows(query), (rows) => rows ?? null)
    : Effect.succeed(null)

/**
 * The row estimate a run's progress shows: the plan's when the run follows one, else the source's. Only a hint: a
 * source that fails, throws or takes more than 5 seconds to tell leaves it undefined and the run goes on.
 */
export const progressEstimate = (prepared: PreparedMode, plan?: ModePlan): Effect.Effect<number | undefined> =>
  typeof plan?.estimated_rows === "number"
    ? Effect.succeed(plan.estimated_rows)
    : prepared.estimate(plan).pipe(
        Effect.timeout("5 seconds"),
        Effect.map((rows) => rows ?? undefined),
        Effect.catchAllCause(() => Effect.succeed(undefined))
      )

/** The fields of a plan that every mode fills the same way. */
export const planHeader = (
  ctx: ExportContext,
  fingerprint: string
): Pick<ModePlan, "name" | "mode" | "fingerprint" | "source" | "destination" | "masks"> => ({
  name: ctx.spec.name,
  ...(ctx.spec.masks.length === 0 ? {} : { masks: ctx.spec.masks.map(({ column, method }) => ({ column, method })) }),
  mode: ctx.spec.mode.kind,
  fingerprint,
  source: ctx.source.displayUrl,
  destination: ctx.sink.uri()
})

/**
 * The columns a plan shows: the output schema the mode resolved already, else the base query described now — the
 * same resolution a run makes, so a column the run would refuse (an unbounded numeric, an override that does not
 * fit) fails the plan too. Undefined when the source cannot describe queries (it runs `mode: full` only).
 */
export const plannedColumns = (
  ctx: ExportContext,
  resolved: BatchSchema | undefined
): Effect.Effect<ModePlan["columns"], SourceError | ConfigError> => {
  if (resolved !== undefined) return Effect.succeed(schemaEntries(resolved))
  const { describe } = ctx.source
  if (describe === undefined) return Effect.succeed(undefined)
  return describe(baseQuery(ctx.spec)).pipe(
    Effect.tap((description) => {
      const personal = personalColumnsNotice(ctx.spec, description.schema)
      return personal === undefined ? Effect.void : ctx.reporter.notice(ctx.spec.name, personal)
    }),
    Effect.flatMap((description) => outputSchemaOf(ctx, description.schema)),
    Effect.map(schemaEntries)
  )
}
