import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Batch, type BatchSchema, batchToRows, makeBatch, type Value } from "./runtime/batch.js"
import { describeCause, PluginError } from "./runtime/errors.js"
import type { BatchTransform } from "./runtime/plugin.js"

/** A row as `mapRows` hands it over: column name → value (see `Value` for each logical type's representation). */
export type Row = Record<string, Value>

/**
 * Builds a {@link BatchTransform} from a function of one row, for programs that do not use Effect.
 *
 * `fn` receives each row as an object keyed by column name and returns the output row, or `null` / `undefined`
 * to drop it. The output columns are `outputSchema` — the source's schema when omitted, or a function of it to
 * add, rename or drop columns. A key missing from a returned row is NULL; keys not in the schema are ignored.
 * Values must use Rivet's representation for their logical type (int64 as `bigint`, decimal as exact text, …).
 * An exception thrown by `fn` fails the export with a `PluginError` naming the transform; nothing is published.
 *
 * @example
 * transforms: {
 *   orders: mapRows(
 *     (row) => (row.status === "test" ? null : { ...row, total_cents: BigInt(Math.round(Number(row.total) * 100)) }),
 *     (schema) => ({ columns: [...schema.columns, { name: "total_cents", type: { kind: "int64" } }] })
 *   )
 * }
 */
export const mapRows =
  (
    fn: (row: Readonly<Row>) => Readonly<Row> | null | undefined,
    outputSchema?: BatchSchema | ((input: BatchSchema) => BatchSchema)
  ): BatchTransform =>
  (input) => {
    const schema =
      outputSchema === undefined ? input.schema : typeof outputSchema === "function" ? outputSchema(input.schema) : outputSchema
    const mapBatch = (batch: Batch): Batch => {
      const rows: Array<Readonly<Row>> = []
      for (const row of batchToRows(batch)) {
        const mapped = fn(row)
        if (mapped !== null && mapped !== undefined) rows.push(mapped)
      }
      return makeBatch(
        schema,
        schema.columns.map((column) => rows.map((row) => row[column.name] ?? null))
      )
    }
    return {
      schema,
      batches: input.batches.pipe(
        Stream.mapEffect((batch) =>
          Effect.try({
            try: () => mapBatch(batch),
            catch: (cause) =>
              new PluginError({
                plugin: "mapRows",
                message: `the row function of a transform failed: ${describeCause(cause)}`,
                hint: "fix the function passed to mapRows (it threw on one of the rows)"
              })
          })
        )
      )
    }
  }
