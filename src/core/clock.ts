import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"

/** The time of the fiber's `Clock` as a Date: tests pin it with `TestClock.setTime` instead of passing one in. */
export const currentDate: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

/** Reads the fiber's `Clock` from synchronous callbacks that cannot yield (a part's key is named when it opens). */
export const dateReader: Effect.Effect<() => Date> = Effect.map(
  Effect.clock,
  (clock) => () => new Date(clock.unsafeCurrentTimeMillis())
)
