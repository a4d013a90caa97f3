import type * as Effect from "effect/Effect"
import type { CursorState } from "../../state/store.js"
import type { BatchSchema } from "../../core/batch.js"
import type { RivetError } from "../../core/errors.js"
import type { PartRecord } from "../../core/manifest.js"
import type { ModePlan } from "../plan/model.js"
import type { ExportContext } from "./context.js"

/** Identifies one run of one export; a resumed run keeps the id (and with it its part names). */
export interface RunJournal {
  readonly runId: string
  readonly startedAt: Date
  /** This run continues an earlier, interrupted attempt with the same id. */
  readonly resumed: boolean
}

export interface ModeOutcome {
  /** Every part of the run in manifest order — those of an earlier attempt included when resumed. */
  readonly parts: ReadonlyArray<PartRecord>
  /** Parts the state store does not have yet (checkpointed modes record theirs as each chunk or page commits). */
  readonly unrecorded: ReadonlyArray<PartRecord>
  readonly schema: BatchSchema
  /** Rows read from the source by this attempt. */
  readonly sourceRows: number
  /** Incremental mode: the position to store once the run is published. */
  readonly cursor?: CursorState | undefined
  /** What every part name of this run starts with, to find objects an interrupted attempt left behind. */
  readonly partStem?: string | undefined
  /** A worker of a distributed run whose run another worker published: it publishes nothing itself. */
  readonly publishedElsewhere?: boolean | undefined
  /** The statements this attempt ran, in unit order, parameters inline (`source.render`). */
  readonly statements?: ReadonlyArray<string> | undefined
  /**
   * Runs once the run is published and its state recorded (cdc: the slot may now release what the run published).
   * Its failure is a notice: the run is already complete.
   */
  readonly afterRecorded?: Effect.Effect<void, RivetError> | undefined
}

/** A mode, resolved against the source (columns, keys, types) before anything runs. */
export interface PreparedMode {
  /** Records each chunk or page as it commits, so `--resume` can continue the run. */
  readonly checkpointed: boolean
  /**
   * What a plan (`rivet run --plan`) and a resumed checkpointed run must still match: query, mode keys, split sizes,
   * format, destination.
   */
  readonly fingerprint: string
  /** What a run would do, reading only the source's catalog and bounds — nothing is written (`rivet plan`). */
  readonly plan: Effect.Effect<ModePlan, RivetError>
  /** The source's row estimate for the run (for progress); null when the source cannot tell. */
  readonly estimate: (plan?: ModePlan) => Effect.Effect<number | null, RivetError>
  /**
   * Runs the export. Given a plan (already checked against the config), runs exactly its units: its chunk ranges,
   * cursor and window bounds, rather than computing them again.
   */
  readonly execute: (journal: RunJournal, plan?: ModePlan) => Effect.Effect<ModeOutcome, RivetError>
  /**
   * What every part name of a run started at `startedAt` begins with (checkpointed modes: their names derive from
   * the run's start), so a run continuing it can find the uploads its killed earlier attempt left open.
   */
  readonly partStemOf?: ((startedAt: Date) => string) | undefined
}

export type PrepareMode = (ctx: ExportContext) => Effect.Effect<PreparedMode, RivetError>
