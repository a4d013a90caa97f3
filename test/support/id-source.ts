import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { BatchSchema } from "../../src/core/batch.js"
import type { SourceError } from "../../src/core/errors.js"
import { defineSource, SourceDriver, type SourceDriverShape, type SourceQuery, type SourceResult } from "../../src/core/plugin.js"

/** The schema of `idSource`'s results: one int64 column `id`, the primary key. */
export const idSchema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }] }

/**
 * An in-memory source plugin over the ids 1..`max` (its bounds, without NULL keys), enough to plan every mode, whose
 * results the test writes itself with `open`; `estimateRows` is passed on when given.
 */
export const idSource = (
  type: string,
  max: number,
  open: (query: SourceQuery) => Effect.Effect<SourceResult, SourceError, Scope.Scope>,
  estimateRows?: SourceDriverShape["estimateRows"]
) => {
  const driver: SourceDriverShape = {
    label: type,
    displayUrl: `${type}:`,
    check: Effect.void,
    describe: () => Effect.succeed({ schema: idSchema, primaryKey: ["id"] }),
    bounds: () => Effect.succeed({ min: "1", max: String(max), hasNulls: false }),
    open,
    ...(estimateRows === undefined ? {} : { estimateRows })
  }
  return defineSource({ type, config: Schema.Struct({}), make: () => Layer.succeed(SourceDriver, driver) })
}
