import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import type { ExportConfig } from "../config/model.js"
import { ConfigError, StateError } from "../core/errors.js"
import type { LeaseProof, StateStoreShape, UnitClaimsShape } from "../state/store.js"
import { describeHolder, type HeldLease } from "./lease.js"

/** The environment variable naming the distributed run a worker joins (`--run-id` wins). */
export const RUN_ID_VARIABLE = "RIVET_RUN_ID"

/** Airflow's `{{ run_id }}` (`scheduled__2026-12-05T02:00:00+00:00`) and a Kubernetes Job's uid both fit. */
const RUN_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:+-]{0,199}$/

/** `rivet run --worker`: this process is one of many sharing the units of one run. */
export interface WorkerSettings {
  /** The run every worker names alike (`--run-id` / `RIVET_RUN_ID`); the export's run id is `{export}_{it}`. */
  readonly runId: string
  /** How long a unit's claim lives without a heartbeat (`RIVET_LEASE_TTL`). */
  readonly ttlMs: number
}

/** What a worker's export needs to share a run's units: the store's claims, its id, and who publishes. */
export interface WorkerJoin {
  readonly runId: string
  /** This worker, as `rivet state show` names it: `host/pid`. */
  readonly id: string
  readonly ttlMs: number
  readonly claims: UnitClaimsShape
  /** Takes the run's publish lease (only one worker writes `manifest.json` and `_SUCCESS`); false while another holds it. */
  readonly claimPublish: Effect.Effect<boolean, StateError>
}

/** The run-id value given to `--run-id` or RIVET_RUN_ID: checked before anything connects. */
export const checkRunId = (runId: string | undefined, source: string): Effect.Effect<string, ConfigError> =>
  runId !== undefined && RUN_ID_PATTERN.test(runId)
    ? Effect.succeed(runId)
    : Effect.fail(
        new ConfigError({
          path: source,
          message:
            runId === undefined
              ? "--worker needs the id of the run to join: every worker of a run must be given the same one"
              : `'${runId}' is not a run id: letters, digits and . _ : + - only, at most 200 characters`,
          hint: `pass --run-id (e.g. Airflow's {{ run_id }} or a Kubernetes Job's uid) or set ${RUN_ID_VARIABLE}`
        })
      )

/**
 * Joins a distributed run as a worker instead of taking the export's lease: every worker of the run works at once,
 * each unit under its own claim. Refused for a SQLite state (one machine's file) and for modes other than chunked.
 * The returned lease is the run's publish lease, taken only once every unit is done; it is what `finishRun` checks.
 */
export const joinAsWorker = (
  spec: ExportConfig,
  state: StateStoreShape,
  settings: WorkerSettings
): Effect.Effect<{ readonly lease: HeldLease; readonly worker: WorkerJoin }, ConfigError | StateError, Scope.Scope> =>
  Effect.gen(function* () {
    const claims = state.claims
    if (claims === undefined) {
      return yield* new ConfigError({
        path: "RIVET_STATE_URL",
        message: `--worker shares a run between processes through the state store, and the state at ${state.location} is a SQLite file only this machine can see`,
        hint: "set RIVET_STATE_URL=postgres://… to a PostgreSQL database every worker can reach (docs/distributed.md)"
      })
    }
    if (!spec.mode.distributable) {
      return yield* new ConfigError({
        path: `export '${spec.name}'.mode`,
        message: `--worker runs chunked exports only; this export is mode: ${spec.mode.kind}`,
        hint: "use mode: chunked, or run this export without --worker (select exports with -e)"
      })
    }
    const now = Date.now()
    const plain = (yield* state.leases(spec.name)).find((lease) => lease.key === spec.name && Date.parse(lease.expiresAt) > now)
    if (plain !== undefined) {
      return yield* new StateError({
        message: `export '${spec.name}' is being run by ${describeHolder(plain)} without --worker; workers join only a distributed run`,
        hint: `let that run finish first; its lease expires at ${plain.expiresAt} if its process is gone`,
        retryable: true
      })
    }
    const runId = `${spec.name}_${settings.runId}`
    const host = os.hostname()
    const proof: LeaseProof = { key: `${runId}/publish`, token: randomBytes(12).toString("hex") }
    let held = false
    const lostError = (detail: string) =>
      new StateError({
        message: `run '${runId}': this worker lost the publish lease (${detail}), so it stops without publishing`,
        hint: "another worker took the run's publication over after this one stalled longer than RIVET_LEASE_TTL; its manifest stands",
        retryable: true
      })
    const renew = Effect.flatMap(state.renewLease(proof, settings.ttlMs, runId), (renewal) =>
      renewal._tag === "Renewed"
        ? Effect.void
        : Effect.fail(lostError(renewal.holder ? `now held by ${describeHolder(renewal.holder)}` : "it expired"))
    )
    yield* Effect.addFinalizer(() => (held ? Effect.ignore(state.releaseLease(proof)) : Effect.void))
    // Renews the publish lease while it is held: writing a manifest and _SUCCESS may outlast a short lease.
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.zipRight(Effect.sleep(Math.max(1, Math.floor(settings.ttlMs / 3))), Effect.suspend(() => (held ? Effect.ignore(renew) : Effect.void)))
      )
    )
    const claimPublish = Effect.map(
      state.acquireLease({ ...proof, exportName: spec.name, pid: process.pid, host, ttlMs: settings.ttlMs }),
      (outcome) => {
        held = outcome._tag === "Acquired"
        return held
      }
    )
    const lease: HeldLease = {
      proof,
      attach: () => Effect.void,
      confirm: Effect.suspend(() => (held ? renew : Effect.fail(lostError("it was never taken")))),
      lost: Effect.never,
      lostNow: Effect.succeedNone
    }
    return { lease, worker: { runId, id: `${host}/${process.pid}`, ttlMs: settings.ttlMs, claims, claimPublish } }
  })
