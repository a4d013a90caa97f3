import * as Effect from "effect/Effect"
import { FormatDriver, makeBatch, type Batch, type BatchSchema, type FormatError, type LogicalType, type Value } from "rivet-export/plugin"
import arrow from "../src/index.js"

/** The plugin's own driver, built the way Rivet builds it (config decoded, `make` called). */
const driver = Effect.provide(FormatDriver, arrow.make({}, { configDir: process.cwd(), env: {} }))

/** Encodes batches as one part; returns the bytes each call produced (open's header arrives with the first write). */
export const encodePart = (schema: BatchSchema, batches: ReadonlyArray<Batch>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const format = yield* driver
      yield* format.validate(schema)
      const encoder = yield* format.open(schema)
      const writes: Array<ReadonlyArray<Uint8Array>> = []
      for (const batch of batches) writes.push(yield* encoder.write(batch))
      const footer = yield* encoder.finish
      return { writes, footer, bytes: Buffer.concat([...writes.flat(), ...footer]) }
    })
  )

/** The FormatError an encoding fails with (the promise rejects otherwise). */
export const encodeError = (schema: BatchSchema, batches: ReadonlyArray<Batch>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const format = yield* driver
      yield* format.validate(schema)
      const encoder = yield* format.open(schema)
      for (const batch of batches) yield* encoder.write(batch)
      yield* encoder.finish
    }).pipe(Effect.flip)
  ) as Promise<FormatError>

/** A schema and one batch from rows keyed by column name. */
export const tableOf = (types: Readonly<Record<string, LogicalType>>, rows: ReadonlyArray<Readonly<Record<string, Value>>>) => {
  const schema: BatchSchema = { columns: Object.entries(types).map(([name, type]) => ({ name, type })) }
  const batch = makeBatch(schema, schema.columns.map((column) => rows.map((row) => row[column.name] ?? null)))
  return { schema, batch }
}
