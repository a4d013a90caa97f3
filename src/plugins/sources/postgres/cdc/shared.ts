import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as SynchronizedRef from "effect/SynchronizedRef"
import type { SourceError } from "../../../../core/errors.js"
import type { ChangeFeed, ChangeRequest, SharedReader } from "../../../../core/plugin.js"
import { openStream } from "./feed.js"
import type { FeedSetup } from "./setup.js"

/**
 * Exports of one config reading the same slot (`ChangeRequest.readers`) share one replication stream: each export's
 * run opens its feed, the last to arrive opens the stream for all, and the stream ends once every one of them let
 * go. A member whose run gives up early is detached; the others read on and publish without it.
 */

interface Handout {
  readonly feed: ChangeFeed
  /** The member lets go of the stream: detached if it did not read to the end; the last one closes the stream. */
  readonly release: Effect.Effect<void>
}

interface Arrival {
  readonly request: ChangeRequest
  readonly handout: Deferred.Deferred<Handout, SourceError>
}

/** Per slot still gathering: who has opened its feed, and whose run ended without (the stream starts without them). */
interface Gathering {
  readonly arrived: ReadonlyMap<string, Arrival>
  readonly ended: ReadonlySet<string>
}

type Gatherings = ReadonlyMap<string, Gathering>

/** Opens the stream for every arrival (in the order of `readers`) and hands each its feed. */
const startStream = (setup: FeedSetup, arrivals: ReadonlyArray<Arrival>) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make()
    const opened = yield* Effect.exit(Scope.extend(openStream(setup, arrivals.map((arrival) => arrival.request)), scope))
    if (Exit.isFailure(opened)) {
      yield* Scope.close(scope, opened)
      yield* Effect.forEach(arrivals, (arrival) => Deferred.failCause(arrival.handout, opened.cause), { discard: true })
      return
    }
    const holders = yield* Ref.make(arrivals.length)
    yield* Effect.forEach(
      arrivals,
      (arrival, i) => {
        const release = Effect.gen(function* () {
          const ended = yield* Effect.either(opened.value.feeds[i]!.reached)
          if (ended._tag === "Left") opened.value.abandon(i)
          const left = yield* Ref.updateAndGet(holders, (n) => n - 1)
          if (left === 0) yield* Scope.close(scope, Exit.void)
        })
        return Deferred.succeed(arrival.handout, { feed: opened.value.feeds[i]!, release: Effect.uninterruptible(release) })
      },
      { discard: true }
    )
  })

/** The `open` of exports sharing a slot, over the driver's gatherings (one per slot that is waiting for its readers). */
export const makeSharedOpen = (setup: FeedSetup) =>
  Effect.map(SynchronizedRef.make<Gatherings>(new Map()), (gatherings) => {
    const update = (slot: string, change: (gathering: Gathering) => Gathering) =>
      SynchronizedRef.update(gatherings, (all) => {
        const gathering = all.get(slot)
        if (gathering === undefined) return all
        const changed = change(gathering)
        const next = new Map(all)
        if (changed.arrived.size === 0) next.delete(slot)
        else next.set(slot, changed)
        return next
      })

    /** The arrivals to start the stream for, once every reader has arrived or ended (taking the gathering away). */
    const settle = (request: ChangeRequest, readers: ReadonlyArray<SharedReader>) =>
      SynchronizedRef.modify(gatherings, (all): [ReadonlyArray<Arrival> | undefined, Gatherings] => {
        const gathering = all.get(request.slot)
        if (gathering === undefined) return [undefined, all]
        if (!readers.every((reader) => gathering.arrived.has(reader.exportName) || gathering.ended.has(reader.exportName))) return [undefined, all]
        const next = new Map(all)
        next.delete(request.slot)
        return [readers.flatMap((reader) => gathering.arrived.get(reader.exportName) ?? []), next]
      })

    /** The readers the gathering still waits for. */
    const awaited = (request: ChangeRequest, readers: ReadonlyArray<SharedReader>) =>
      Effect.map(SynchronizedRef.get(gatherings), (all) => {
        const gathering = all.get(request.slot)
        return gathering === undefined ? [] : readers.filter((reader) => !gathering.arrived.has(reader.exportName) && !gathering.ended.has(reader.exportName))
      })

    /** Releases a handout that arrived after its member stopped waiting. */
    const releaseUnclaimed = (handout: Deferred.Deferred<Handout, SourceError>) =>
      Effect.flatMap(Deferred.poll(handout), (polled) =>
        Option.isNone(polled) ? Effect.void : Effect.flatMap(Effect.option(polled.value), Option.match({ onNone: () => Effect.void, onSome: (h) => h.release }))
      )

    return (request: ChangeRequest): Effect.Effect<ChangeFeed, SourceError, Scope.Scope> =>
      Effect.gen(function* () {
        const readers = request.readers ?? []
        const handout = yield* Deferred.make<Handout, SourceError>()
        yield* SynchronizedRef.update(gatherings, (all) => {
          const gathering = all.get(request.slot) ?? { arrived: new Map(), ended: new Set<string>() }
          return new Map(all).set(request.slot, { ...gathering, arrived: new Map(gathering.arrived).set(request.exportName, { request, handout }) })
        })
        // Until the handout: whoever completes the gathering (the last to arrive, or a member seeing the last
        // missing reader's run end) opens the stream for all who arrived.
        const gather: Effect.Effect<Handout, SourceError> = Effect.gen(function* () {
          const complete = yield* settle(request, readers)
          if (complete !== undefined) yield* startStream(setup, complete)
          const missing = yield* awaited(request, readers)
          if (missing.length === 0) return yield* Deferred.await(handout)
          const first = yield* Effect.raceFirst(
            Effect.map(Deferred.await(handout), (got) => ({ got })),
            Effect.raceAll(missing.map((reader) => Effect.as(reader.ended, { ended: reader.exportName })))
          )
          if ("got" in first) return first.got
          yield* update(request.slot, (gathering) => ({ ...gathering, ended: new Set(gathering.ended).add(first.ended) }))
          return yield* gather
        })
        const waiting = gather.pipe(
          Effect.onExit((exit) =>
            Exit.isSuccess(exit)
              ? Effect.void
              : Effect.zipRight(
                  update(request.slot, (gathering) => {
                    const arrived = new Map(gathering.arrived)
                    arrived.delete(request.exportName)
                    return { ...gathering, arrived }
                  }),
                  releaseUnclaimed(handout)
                )
          )
        )
        // Waiting may be interrupted; once the handout is here, its release is registered before anything else.
        return yield* Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(restore(waiting), ({ feed, release }) => Effect.as(Effect.addFinalizer(() => release), feed))
        )
      })
  })
