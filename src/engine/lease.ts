import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import type { LeaseHolder, LeaseProof, LeaseRenewal, StateStoreShape } from "../state/store.js"
import { durationProblem, parseDuration } from "../core/duration.js"
import { ConfigError, StateError } from "../core/errors.js"
import type { ProgressReporterShape } from "../core/progress.js"

/** The environment variable that sets the lease's time to live (a duration such as `60s`). */
export const LEASE_TTL_VARIABLE = "RIVET_LEASE_TTL"

export const DEFAULT_LEASE_TTL_MS = 60_000

/** The shortest time to live: a heartbeat every third of it must fit between two SQLite lock waits. */
const MIN_LEASE_TTL_MS = 3_000

/** How often a run waiting for a held lease asks again. */
const WAIT_POLL_MS = 1_000

export interface LeaseSettings {
  /** How long a lease lives without a heartbeat; the holder renews it every third of that. */
  readonly ttlMs: number
  /** How long to wait for a lease another run holds before giving up (0: give up at once). */
  readonly waitMs: number
}

/** `RIVET_LEASE_TTL`, or the default; a value that is not a duration (or is too short) is a ConfigError. */
export const leaseTtlFrom = (env: Readonly<Record<string, string | undefined>>): Effect.Effect<number, ConfigError> => {
  const raw = env[LEASE_TTL_VARIABLE]?.trim()
  if (raw === undefined || raw === "") return Effect.succeed(DEFAULT_LEASE_TTL_MS)
  const ms = parseDuration(raw)
  if (ms === undefined || ms < MIN_LEASE_TTL_MS) {
    return Effect.fail(
      new ConfigError({
        path: LEASE_TTL_VARIABLE,
        message: ms === undefined ? durationProblem(raw) : `${LEASE_TTL_VARIABLE}=${raw} is too short: at least ${MIN_LEASE_TTL_MS / 1000}s`,
        hint: `the default is ${DEFAULT_LEASE_TTL_MS / 1000}s; a lease must outlive the longest stall of a healthy run`
      })
    )
  }
  return Effect.succeed(ms)
}

/** A lease this run holds until its scope closes. */
export interface HeldLease {
  readonly proof: LeaseProof
  /** Names the journaled run in the lease (so a refused run can name it), renewing it. Fails when lost. */
  readonly attach: (runId: string) => Effect.Effect<void, StateError>
  /** Renews the lease now and fails when it is no longer this run's: checked right before publishing. */
  readonly confirm: Effect.Effect<void, StateError>
  /** Fails as soon as the heartbeat finds the lease lost; never succeeds. */
  readonly lost: Effect.Effect<never, StateError>
  /** Asks the store now: the error naming the new holder when the lease is lost (none when held or unknown). */
  readonly lostNow: Effect.Effect<Option.Option<StateError>>
  /**
   * The holder this run took the lease over from, if any: `expired` when its lease ran out (its process may still be
   * alive, e.g. cut off from the state store), else its process was found gone on this host.
   */
  readonly tookOver?: TakeOver | undefined
}

export interface TakeOver {
  readonly holder: LeaseHolder
  readonly expired: boolean
}

/**
 * A holder on this host whose process is gone (killed, crashed): its lease need not be waited out. Holders on
 * other hosts cannot be asked; their leases expire.
 */
const isGoneHere = (holder: LeaseHolder, host: string): boolean => {
  if (holder.host !== host || holder.pid === process.pid) return false
  try {
    process.kill(holder.pid, 0)
    return false
  } catch (error) {
    // EPERM: the process exists but belongs to another user.
    return typeof error === "object" && error !== null && "code" in error && error.code === "ESRCH"
  }
}

const seconds = (ms: number): string => `${Math.max(0, Math.round(ms / 1000))} s`

/** `run 'x' (pid 12 on host)`, for messages. */
export const describeHolder = (holder: LeaseHolder): string =>
  `${holder.runId === undefined ? "a run not journaled yet" : `run '${holder.runId}'`} (pid ${holder.pid} on ${holder.host})`

const heldError = (exportName: string, holder: LeaseHolder, now: number, waitedMs: number, resume: boolean) =>
  new StateError({
    message:
      `export '${exportName}' is being run by ${describeHolder(holder)}, started ${seconds(now - Date.parse(holder.acquiredAt))} ago ` +
      `(last heartbeat ${seconds(now - Date.parse(holder.heartbeatAt))} ago)` +
      (waitedMs > 0 ? `; waited ${seconds(waitedMs)} for it` : "") +
      (resume ? `; --resume continues a run only once its process has stopped` : ""),
    hint:
      `one run per export at a time: let it finish (\`rivet run --wait 10m\` waits up to 10 minutes for it). If that process is gone, ` +
      `its lease expires at ${holder.expiresAt}, ${seconds(Date.parse(holder.expiresAt) - now)} from now, and the next run takes it over`,
    retryable: true
  })

const lostError = (key: string, holder: LeaseHolder | undefined, why: string) =>
  new StateError({
    message: `this run lost the lease on export '${key}' (${why})${holder ? `; it is now held by ${describeHolder(holder)}` : ""}: it stops without publishing`,
    hint: "its heartbeat stopped for longer than the lease's time to live (the process was paused, or could not reach the state store); set RIVET_LEASE_TTL longer than such stalls last",
    retryable: true
  })

/**
 * Takes the export's lease before anything reads the source or the cursor, waiting up to `settings.waitMs` for a
 * holder to finish; an expired lease is taken over with a notice. While the scope is open a heartbeat renews it
 * every third of its time to live; when the scope closes it is released (a lease whose release fails simply
 * expires). The lease key is the export's name: a later split of one export into units can lease `export/unit`.
 */
export const acquireLease = (
  ctx: { readonly exportName: string; readonly state: StateStoreShape; readonly reporter: ProgressReporterShape },
  settings: LeaseSettings,
  options: { readonly resume: boolean }
): Effect.Effect<HeldLease, StateError, Scope.Scope> =>
  Effect.gen(function* () {
    const { exportName, state, reporter } = ctx
    const proof: LeaseProof = { key: exportName, token: randomBytes(12).toString("hex") }
    const host = os.hostname()
    const request = { ...proof, exportName, pid: process.pid, host, ttlMs: settings.ttlMs, isGone: (holder: LeaseHolder) => isGoneHere(holder, host) }
    const startedWaiting = yield* Clock.currentTimeMillis

    let takenOver: TakeOver | undefined
    const take = Effect.gen(function* () {
      let announced = false
      for (;;) {
        const outcome = yield* state.acquireLease(request)
        const now = yield* Clock.currentTimeMillis
        if (outcome._tag === "Acquired") {
          if (outcome.takenOver) {
            const old = outcome.takenOver
            const since = `its last heartbeat was ${seconds(now - Date.parse(old.heartbeatAt))} ago`
            takenOver = { holder: old, expired: Date.parse(old.expiresAt) <= now }
            yield* reporter.notice(
              exportName,
              takenOver.expired
                ? `took over the expired lease of ${describeHolder(old)}: ${since}, past the lease's time to live of ${seconds(settings.ttlMs)} (its process died, stalled or could not reach the state store)`
                : `took over the lease of ${describeHolder(old)}: that process no longer exists on this host (${since})`
            )
          }
          return outcome.holder
        }
        const waited = now - startedWaiting
        if (waited >= settings.waitMs) return yield* heldError(exportName, outcome.holder, now, waited, options.resume)
        if (!announced) {
          announced = true
          yield* reporter.notice(exportName, `waiting up to ${seconds(settings.waitMs - waited)} for ${describeHolder(outcome.holder)} to finish`)
        }
        yield* Effect.sleep(Math.min(WAIT_POLL_MS, settings.waitMs - waited))
      }
    })
    const holder = yield* Effect.acquireRelease(take, () => Effect.ignore(state.releaseLease(proof)))

    const lostSignal = yield* Deferred.make<never, StateError>()
    let expiresAt = Date.parse(holder.expiresAt)
    let runId: string | undefined
    const tookOver = (holder: LeaseHolder | undefined) => lostError(exportName, holder, "another run took it over")
    const renewed = (renewal: LeaseRenewal) =>
      renewal._tag === "Lost"
        ? Effect.fail(tookOver(renewal.holder))
        : Effect.sync(() => {
            expiresAt = Date.parse(renewal.holder.expiresAt)
          })
    const renewal = Effect.suspend(() => state.renewLease(proof, settings.ttlMs, runId))
    const renew = Effect.flatMap(renewal, renewed)
    // A renewal that fails for a while (the store already retried it) is only fatal once the lease has expired.
    const beat = renewal.pipe(
      Effect.matchEffect({
        onSuccess: renewed,
        onFailure: (error) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            now >= expiresAt
              ? Effect.fail(lostError(exportName, undefined, `it could not be renewed: ${error.message}`))
              : Effect.void
          )
      })
    )
    const heartbeat = Effect.forever(Effect.zipRight(Effect.sleep(Math.max(1, Math.floor(settings.ttlMs / 3))), beat))
    yield* Effect.forkScoped(Effect.catchAll(heartbeat, (error) => Deferred.fail(lostSignal, error)))

    return {
      proof,
      attach: (id) =>
        Effect.suspend(() => {
          runId = id
          return renew
        }),
      confirm: renew,
      lost: Deferred.await(lostSignal),
      lostNow: renewal.pipe(
        Effect.map((now) => (now._tag === "Lost" ? Option.some(tookOver(now.holder)) : Option.none())),
        Effect.orElseSucceed(() => Option.none())
      ),
      tookOver: takenOver
    } satisfies HeldLease
  }).pipe(Effect.withSpan("Lease.acquire", { attributes: { export: ctx.exportName } }))
