import * as Effect from "effect/Effect"
import type { CommittedPart, UnitRecord } from "../../state/store.js"
import type { StateError } from "../../core/errors.js"
import type { ExportContext } from "./context.js"
import type { RunJournal } from "./mode.js"
import type { UnitOutcome } from "./unit.js"

/**
 * What chunked and keyset share about checkpoints: a checkpointed run records each unit with its parts as it
 * commits, and `--resume` continues from what an earlier attempt of the run recorded.
 */

/** The units and parts an earlier attempt of this run recorded; nothing for a new run. */
export const earlierAttempt = (
  ctx: Pick<ExportContext, "state">,
  journal: RunJournal
): Effect.Effect<{ readonly units: ReadonlyArray<UnitRecord>; readonly parts: ReadonlyArray<CommittedPart> }, StateError> =>
  journal.resumed
    ? Effect.all({ units: ctx.state.units(journal.runId), parts: ctx.state.parts(journal.runId) })
    : Effect.succeed({ units: [], parts: [] })

/**
 * A unit is done: recorded with its parts in one transaction when the run is checkpointed (else its parts are
 * recorded with the run when it publishes), then counted.
 */
export const commitUnit = (
  ctx: Pick<ExportContext, "state" | "progress">,
  journal: RunJournal,
  checkpoint: boolean,
  unit: UnitRecord,
  outcome: UnitOutcome
): Effect.Effect<void, StateError> =>
  Effect.zipRight(
    checkpoint ? ctx.state.commitUnit(journal.runId, { ...unit, status: "done", rows: outcome.rows }, outcome.parts) : Effect.void,
    ctx.progress.unitDone
  )
