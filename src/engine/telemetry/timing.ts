import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"

/** Milliseconds since some fixed point, with sub-millisecond precision (a batch can take less than one). */
export const nowMs: Effect.Effect<number> = Effect.map(Clock.currentTimeNanos, (nanos) => Number(nanos) / 1e6)

/** The same stream, adding to `waited` how long its consumer waited for each element. */
export const timedPulls = <A, E, R>(stream: Stream.Stream<A, E, R>, waited: Ref.Ref<number>): Stream.Stream<A, E, R> =>
  Stream.unwrapScoped(
    Effect.map(Stream.toPull(stream), (pull) =>
      Stream.repeatEffectChunkOption(
        Effect.flatMap(nowMs, (start) =>
          Effect.ensuring(pull, Effect.flatMap(nowMs, (end) => Ref.update(waited, (total) => total + end - start)))
        )
      )
    )
  )
