import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StateError } from "../core/errors.js"
import type { PartRecord } from "../core/manifest.js"

/**
 * What Rivet remembers between runs, per export: the incremental cursor, a journal of runs, the parts each run
 * committed, the chunk/page plan of checkpointed runs and the schema baseline. Two backends keep the same tables:
 * a SQLite file beside the config (default) and PostgreSQL when `RIVET_STATE_URL` is set.
 *
 * Every method that changes several rows does so in one transaction, so a crash leaves either the old or the new
 * state, never a mix.
 */

/** An incremental export's position: rows with `column` greater than `value` are new. */
export interface CursorState {
  readonly column: string
  /** The last exported value, as source text (e.g. `2026-12-01T10:00:00.000000Z`, `41234`). */
  readonly value: string
  /** Its logical type, spelled as in manifests (`timestamptz`, `int64`). */
  readonly type: string
}

export type RunStatus = "running" | "success" | "failed" | "skipped" | "interrupted" | "abandoned"

export interface RunRecord {
  readonly runId: string
  readonly exportName: string
  readonly mode: string
  /** ISO-8601 UTC. */
  readonly startedAt: string
  readonly finishedAt?: string | undefined
  readonly status: RunStatus
  readonly rows: number
  readonly parts: number
  readonly bytes: number
  readonly error?: string | undefined
  /** True when the run records each chunk/page as it commits, so `rivet run --resume` can continue it. */
  readonly checkpointed: boolean
  /** Identifies a checkpointed run's plan (query, key, sizes, format, destination); a resume must match it. */
  readonly planFingerprint?: string | undefined
  /**
   * A checkpointed run's source identity and byte-shaping options as JSON text (src/engine/modes/run-identity.ts),
   * opaque to the store; absent for runs recorded before Rivet kept it.
   */
  readonly identity?: string | undefined
}

/** One chunk (chunked mode) or page (keyset mode) of a checkpointed run. */
export interface UnitRecord {
  readonly index: number
  /** The unit's bounds as JSON text; opaque to the store. */
  readonly spec: string
  readonly status: "pending" | "done"
  readonly rows: number
  /** Keyset pages: the last key of the page as JSON text, where the next page starts. */
  readonly lastKey?: string | undefined
}

/** A part some run committed, for `rivet state files` and for the manifest of a resumed run. */
export interface CommittedPart extends PartRecord {
  readonly runId: string
  readonly exportName: string
  /** The chunk/page the part belongs to; absent for single-runner modes. */
  readonly unit?: number | undefined
  /** ISO-8601 UTC. */
  readonly committedAt: string
}

export interface FinishedRun {
  readonly status: Exclude<RunStatus, "running">
  readonly finishedAt: string
  readonly rows: number
  readonly parts: number
  readonly bytes: number
  readonly error?: string | undefined
}

/** What `rivet state show` prints per export. */
export interface ExportSummary {
  readonly exportName: string
  readonly cursor?: CursorState | undefined
  readonly lastRun?: RunRecord | undefined
  /** The run holding the export's lease right now (or an expired lease nobody has taken over yet). */
  readonly lease?: LeaseHolder | undefined
}

export interface SchemaBaseline {
  readonly fingerprint: string
  /** `[{name, type}]` as JSON text. */
  readonly columns: string
  readonly updatedAt: string
}

/**
 * Who holds a lease: one run of one export at a time, across processes and machines sharing the state. The holder
 * renews `heartbeatAt` while it runs; once `expiresAt` has passed (its process died, or stood still for longer
 * than the lease's time to live) another run may take the lease over.
 */
export interface LeaseHolder {
  /** The export's name today; `export/unit` when units of one export are leased to different workers. */
  readonly key: string
  readonly exportName: string
  /** The holder's run, once it has been journaled (a lease is taken before the run id is known). */
  readonly runId?: string | undefined
  readonly pid: number
  readonly host: string
  /** ISO-8601 UTC. */
  readonly acquiredAt: string
  readonly heartbeatAt: string
  readonly expiresAt: string
}

export interface LeaseRequest {
  readonly key: string
  readonly exportName: string
  /** Unique per acquisition: only the acquisition holding this token may renew or release the lease. */
  readonly token: string
  readonly pid: number
  readonly host: string
  readonly ttlMs: number
  /**
   * A holder known to be gone although its lease has not expired yet (a process of this host that no longer
   * exists): its lease is taken over at once.
   */
  readonly isGone?: ((holder: LeaseHolder) => boolean) | undefined
}

export type LeaseAcquisition =
  | {
      readonly _tag: "Acquired"
      readonly holder: LeaseHolder
      /** The lease this acquisition replaced: expired (its holder stopped renewing it) or its holder gone. */
      readonly takenOver?: LeaseHolder | undefined
    }
  | { readonly _tag: "Held"; readonly holder: LeaseHolder }

export type LeaseRenewal =
  | { readonly _tag: "Renewed"; readonly holder: LeaseHolder }
  /** The lease is gone or has another holder (it expired and was taken over). */
  | { readonly _tag: "Lost"; readonly holder?: LeaseHolder | undefined }

/** The lease an operation must still hold for its write to count. */
export interface LeaseProof {
  readonly key: string
  readonly token: string
}

export interface StateStoreShape {
  /** Where the state lives, for messages: a file path or a URL with the password masked. */
  readonly location: string

  readonly cursor: (exportName: string) => Effect.Effect<Option.Option<CursorState>, StateError>

  /** Journals a new run (status `running`). A second run with the same id is a StateError. */
  readonly beginRun: (run: RunRecord) => Effect.Effect<void, StateError>
  /** Sets a resumed run back to `running` (its units and parts are kept). */
  readonly reopenRun: (runId: string) => Effect.Effect<void, StateError>
  /**
   * Ends a run in one transaction: its outcome, the parts not yet recorded by `commitUnit`, and — only when
   * given — the export's new cursor.
   *
   * With `cursorFrom` (the cursor the run started from, `null` for none) the cursor is compare-and-set: it is
   * stored only while the stored one is still `cursorFrom` (or already the new one: a retried write), else the
   * whole call fails and nothing is written. With `lease`, the call fails unless that lease is still held.
   */
  readonly finishRun: (
    runId: string,
    outcome: FinishedRun,
    extra?: {
      readonly parts?: ReadonlyArray<PartRecord> | undefined
      readonly cursor?: CursorState | undefined
      readonly cursorFrom?: CursorState | null | undefined
      readonly lease?: LeaseProof | undefined
    }
  ) => Effect.Effect<void, StateError>
  readonly run: (runId: string) => Effect.Effect<Option.Option<RunRecord>, StateError>
  /** The newest checkpointed run of an export that did not succeed and was not abandoned or skipped. */
  readonly unfinishedRun: (exportName: string) => Effect.Effect<Option.Option<RunRecord>, StateError>

  /** Stores a checkpointed run's planned units (all `pending`). */
  readonly savePlan: (runId: string, units: ReadonlyArray<UnitRecord>) => Effect.Effect<void, StateError>
  /** The run's units, by index. */
  readonly units: (runId: string) => Effect.Effect<ReadonlyArray<UnitRecord>, StateError>
  /**
   * Marks a unit done together with its parts, in one transaction. Inserts the unit if the plan did not have it
   * (keyset pages are discovered one by one); a unit committed twice keeps the second commit's parts only.
   */
  readonly commitUnit: (
    runId: string,
    unit: UnitRecord,
    parts: ReadonlyArray<PartRecord>
  ) => Effect.Effect<void, StateError>
  /** Parts recorded for a run: those of done units (in unit, then part order) and those given to `finishRun`. */
  readonly parts: (runId: string) => Effect.Effect<ReadonlyArray<CommittedPart>, StateError>

  /** Newest first; all exports when `exportName` is absent. */
  readonly runs: (exportName: string | undefined, limit: number) => Effect.Effect<ReadonlyArray<RunRecord>, StateError>
  /** Newest first; all exports when `exportName` is absent. */
  readonly files: (
    exportName: string | undefined,
    limit: number
  ) => Effect.Effect<ReadonlyArray<CommittedPart>, StateError>
  /** One entry per export that has a cursor or a run, by name. */
  readonly exports: Effect.Effect<ReadonlyArray<ExportSummary>, StateError>
  /**
   * Forgets an export's cursor and schema baseline and marks its unfinished runs `abandoned` (the journal and
   * file records stay). Returns what was cleared.
   */
  readonly reset: (
    exportName: string
  ) => Effect.Effect<{ readonly cursor: boolean; readonly abandonedRuns: number }, StateError>

  /**
   * Takes the lease when it is free, already this token's, or expired (then `takenOver` names the old holder);
   * otherwise reports who holds it. Never waits.
   */
  readonly acquireLease: (request: LeaseRequest) => Effect.Effect<LeaseAcquisition, StateError>
  /** Extends the lease by `ttlMs` from now, and names its run once known; `Lost` when the token no longer holds it. */
  readonly renewLease: (
    proof: LeaseProof,
    ttlMs: number,
    runId?: string | undefined
  ) => Effect.Effect<LeaseRenewal, StateError>
  /** Gives the lease up (nothing happens when the token no longer holds it). */
  readonly releaseLease: (proof: LeaseProof) => Effect.Effect<void, StateError>
  /** Leases held (expired ones included), by key; those of one export when given. */
  readonly leases: (exportName?: string | undefined) => Effect.Effect<ReadonlyArray<LeaseHolder>, StateError>

  /** Units claimed by workers of distributed runs (`rivet run --worker`); PostgreSQL state only. */
  readonly claims?: UnitClaimsShape | undefined

  readonly schemaBaseline: (exportName: string) => Effect.Effect<Option.Option<SchemaBaseline>, StateError>
  readonly setSchemaBaseline: (exportName: string, baseline: SchemaBaseline) => Effect.Effect<void, StateError>
}

/** A worker's lease on one unit of a distributed run. */
export interface UnitClaim {
  readonly unit: UnitRecord
  /** Only this claim may renew, commit or release the unit. */
  readonly token: string
}

export type ClaimResult =
  | { readonly _tag: "Claimed"; readonly claim: UnitClaim }
  /** Pending units remain, but every one is leased by a live worker or the run's `parallel` cap is reached. */
  | { readonly _tag: "Busy" }
  /** Every unit of the run is done. */
  | { readonly _tag: "AllDone" }

/** Who holds (or last held) a unit of a distributed run, for `rivet state show`. */
export interface UnitLease {
  readonly runId: string
  readonly index: number
  readonly status: "pending" | "done"
  readonly worker?: string | undefined
  readonly claimedAt?: string | undefined
  readonly heartbeatAt?: string | undefined
  readonly expiresAt?: string | undefined
  /** How many times the unit was claimed: more than 1 when a worker's lease expired and another redid it. */
  readonly claims: number
}

/**
 * Units of one run shared by worker processes on many machines. Times come from the state database's clock, so
 * the workers' clocks need not agree.
 */
export interface UnitClaimsShape {
  /** Journals the run with its whole plan in one transaction, unless it exists: `true` when this call created it. */
  readonly createRun: (run: RunRecord, units: ReadonlyArray<UnitRecord>) => Effect.Effect<boolean, StateError>
  /**
   * Claims one pending unit whose lease is free or expired, unless `cap` units of the run are leased already
   * (`SELECT … FOR UPDATE SKIP LOCKED` under a lock of the run's row).
   */
  readonly claim: (request: {
    readonly runId: string
    readonly worker: string
    readonly ttlMs: number
    readonly cap: number
  }) => Effect.Effect<ClaimResult, StateError>
  /** Extends the claim by `ttlMs`; false when the claim was lost (expired and taken by another worker). */
  readonly renew: (runId: string, claim: UnitClaim, ttlMs: number) => Effect.Effect<boolean, StateError>
  /**
   * Marks the unit done with its parts in one transaction. False, recording nothing, when the claim was lost: the
   * unit is another worker's now, and these parts are listed by no manifest.
   */
  readonly commit: (
    runId: string,
    claim: UnitClaim,
    rows: number,
    parts: ReadonlyArray<PartRecord>
  ) => Effect.Effect<boolean, StateError>
  /** Gives the unit back (a failed attempt): another worker may claim it at once. */
  readonly release: (runId: string, claim: UnitClaim) => Effect.Effect<void, StateError>
  /** The units of an export's most recent distributed run (or of the run given), by index. */
  readonly leases: (exportName: string, runId?: string | undefined) => Effect.Effect<ReadonlyArray<UnitLease>, StateError>
}

export class StateStore extends Context.Tag("rivet/StateStore")<StateStore, StateStoreShape>() {}

/** The SQLite file's name, created in the config file's directory. */
export const STATE_FILE_NAME = ".rivet_state.db"
