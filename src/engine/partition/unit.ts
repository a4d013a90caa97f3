import * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { Batch, BatchSchema } from "../../core/batch.js"
import type { ConfigError, FormatError } from "../../core/errors.js"
import type { PartRecord } from "../../core/manifest.js"
import type { FormatDriverShape } from "../../core/plugin.js"
import type { PartitionSpec } from "../../config/partition.js"
import type { PartCap, PartPiece } from "../encode-parts.js"
import { makePartitionedEncoder } from "./encode.js"
import { partitionLayout } from "./values.js"

/** How a unit's parts are named and described: the key of part N, its partition values, what to do once committed. */
export interface PartNaming {
  readonly keyOf: (part: number) => string
  readonly partitionOf?: ((part: number) => PartRecord["partition"]) | undefined
  readonly committed?: ((record: PartRecord) => Effect.Effect<void>) | undefined
}

/**
 * A partitioned unit's encoder and part naming, once `partition_by` is checked against the unit's result schema:
 * part N of the unit is `{directory}{the unit's own name for part N}`.
 */
export const partitionedUnit = (
  spec: PartitionSpec,
  schema: BatchSchema,
  format: FormatDriverShape,
  cap: PartCap | undefined,
  work: { readonly keyOf: (part: number) => string; readonly runId: string },
  exportName: string
): Effect.Effect<
  { readonly encode: <E, R>(batches: Stream.Stream<Batch, E, R>) => Stream.Stream<PartPiece, E | FormatError, R>; readonly naming: PartNaming },
  ConfigError | FormatError
> =>
  Effect.gen(function* () {
    const layout = partitionLayout(spec, schema)
    if (!("keys" in layout)) return yield* Effect.fail(layout)
    yield* format.validate(layout.fileSchema)
    const encoder = makePartitionedEncoder(format, layout, spec.maxOpen, cap, { exportName, runId: work.runId })
    // A part's directory is kept until its commit, so the key names the same object on every call.
    const keyOf = (part: number) => `${encoder.partitionOf(part)?.directory ?? ""}${work.keyOf(part)}`
    const partByKey = new Map<string, number>()
    return {
      encode: encoder.encode,
      naming: {
        keyOf: (part) => {
          const key = keyOf(part)
          partByKey.set(key, part)
          return key
        },
        partitionOf: (part) => encoder.partitionOf(part)?.values,
        committed: (record) =>
          Effect.sync(() => {
            const part = partByKey.get(record.path)
            partByKey.delete(record.path)
            if (part !== undefined) encoder.release(part)
          })
      }
    }
  })
