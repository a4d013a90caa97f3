import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { StateError } from "../../core/errors.js"
import type { CursorState } from "../../state/store.js"
import type { ModeOutcome } from "../modes/mode.js"
import type { ExportRun } from "./export-run.js"

/** How a run keeps the incremental cursor it reached once its manifest is published. */
export interface CursorToStore {
  /** Right before the manifest: fails when another run stored a cursor since this run read it. */
  readonly confirmUnmoved: Effect.Effect<void, StateError>
  /**
   * What `finishRun` stores with the run: the cursor reached, set only while the stored one is still the cursor the
   * run started from (compare-and-set).
   */
  readonly compareAndSet: { readonly cursor: CursorState | undefined; readonly cursorFrom: CursorState | null | undefined }
  /** What the next run does when the published run's state could not be written; undefined without a cursor. */
  readonly ifUnrecorded: string | undefined
}

const showCursor = (cursor: CursorState | null): string =>
  cursor === null ? "none (it exports every row)" : `${cursor.column} = ${cursor.value}`

/** The cursor a mode that tracks one (incremental) keeps after publishing `outcome`: other modes store none. */
export const cursorToStore = (run: ExportRun, runId: string, outcome: ModeOutcome): CursorToStore => {
  const { spec, state } = run.ctx
  const { cursorFrom } = run
  const compareAndSet = { cursor: outcome.cursor, cursorFrom: outcome.cursor ? cursorFrom : undefined }
  if (!spec.mode.tracksCursor) return { confirmUnmoved: Effect.void, compareAndSet, ifUnrecorded: undefined }
  return {
    confirmUnmoved: Effect.gen(function* () {
      const stored = Option.getOrNull(yield* state.cursor(spec.name))
      if (stored?.value === cursorFrom?.value && stored?.column === cursorFrom?.column) return
      return yield* new StateError({
        message: `export '${spec.name}': the stored cursor moved from ${showCursor(cursorFrom)} to ${showCursor(stored)} while run '${runId}' ran, so this run publishes nothing`,
        hint: "another run of the export stored its cursor meanwhile; the next run continues from that cursor (this run's files are listed by no manifest)",
        retryable: true
      })
    }),
    compareAndSet,
    ifUnrecorded: `the stored cursor stays at ${showCursor(cursorFrom)}, so the next run exports this run's rows again (they will be in the files of two runs, each listed by its own manifest)`
  }
}
