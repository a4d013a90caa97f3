import { numbersEveryPart } from "../../config/partition.js"
import * as Effect from "effect/Effect"
import type { ColumnRef, SourceQuery } from "../../core/plugin.js"
import type { BatchSchema } from "../../core/batch.js"
import { partNamePattern, singleRunnerPartName } from "../../core/naming.js"
import type { ModePlan } from "../plan/model.js"
import type { ExportContext } from "./context.js"
import type { ModeOutcome, PreparedMode, RunJournal } from "./mode.js"
import { estimateOf, planHeader, plannedColumns, statementOf } from "./planning.js"
import { runAttempt } from "./attempt.js"

/** What a single-runner mode resolved before running: its query (computed now, or taken from a plan) and plan details. */
export interface SingleSetup {
  readonly fingerprint: string
  /** The statement's query; given a plan, with the plan's cursor or window bounds. */
  readonly queryOf: (plan?: ModePlan) => SourceQuery
  /** What the plan shows besides the statement (cursor position, window). */
  readonly details: Pick<ModePlan, "cursor" | "window">
  /** The output schema when preparing described the query already; otherwise the plan describes it. */
  readonly schema?: BatchSchema | undefined
  readonly track: ReadonlyArray<ColumnRef>
  readonly cursorOf?: (last: ReadonlyArray<string | undefined>) => ModeOutcome["cursor"]
}

/** Runs one query into `{export}_{date}_{time}_{ms}[_partN].{ext}` parts — full, incremental and time_window. */
export const singleRun = (ctx: ExportContext, setup: SingleSetup): PreparedMode => ({
  checkpointed: false,
  fingerprint: setup.fingerprint,
  plan: Effect.gen(function* () {
    const query = setup.queryOf()
    const columns = yield* plannedColumns(ctx, setup.schema)
    return {
      ...planHeader(ctx, setup.fingerprint),
      statements: [statementOf(ctx, query)],
      ...(columns ? { columns } : {}),
      estimated_rows: yield* estimateOf(ctx, query),
      ...setup.details,
      naming: partNamePattern("single", ctx.spec.name, ctx.format.extension, numbersEveryPart(ctx.spec))
    }
  }),
  estimate: (plan?: ModePlan) => estimateOf(ctx, setup.queryOf(plan)),
  execute: (journal: RunJournal, plan?: ModePlan) =>
    Effect.gen(function* () {
      let openedAt: Date | undefined
      const { spec, format } = ctx
      const query = setup.queryOf(plan)
      const outcome = yield* runAttempt(ctx, {
        unit: { kind: "query", index: 0 },
        query,
        runId: journal.runId,
        track: setup.track,
        runStartedAt: journal.startedAt,
        keyOf: (part) => {
          openedAt ??= ctx.now()
          return singleRunnerPartName(spec.name, openedAt, format.extension, part, numbersEveryPart(spec))
        }
      })
      return {
        parts: outcome.parts,
        unrecorded: outcome.parts,
        schema: outcome.schema,
        sourceRows: outcome.sourceRows,
        cursor: setup.cursorOf?.(outcome.last),
        statements: [statementOf(ctx, query)]
      }
    })
})
