import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Batch, type BatchSchema, batchToRows, InvalidValue, makeBatch, type Value } from "./core/batch.js"
import { defectDetail, describeCause, PluginError } from "./core/errors.js"
import type { BatchTransform } from "./core/plugin.js"

/** A row as `mapRows` hands it over: column name → value (see `Value` for each logical type's representation). */
export type Row = Record<string, Value>

/**
 * Builds a {@link BatchTransform} from a function of one row, for programs that do not use Effect.
 *
 * `fn` receives each row as an object keyed by column name and returns the output row, or `null` / `undefined`
 * to drop it. The output columns are `outputSchema` — the source's schema when omitted, or a function of it to
 * add, rename or drop columns. A key missing from a returned row is NULL. Every returned row is checked before
 * anything is encoded: a key that is not an output column, or a value not in Rivet's representation for its
 * column's logical type (int64 as `bigint`, decimal as exact text, …), fails the export with a `PluginError` naming
 * the key or the column and value — as does an exception thrown by `fn`; nothing is published.
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
    const columns = new Set(schema.columns.map((column) => column.name))
    const mapBatch = (batch: Batch): Batch => {
      const rows: Array<Readonly<Row>> = []
      for (const row of batchToRows(batch)) {
        let mapped: Readonly<Row> | null | undefined
        try {
          mapped = fn(row)
        } catch (cause) {
          throw transformError(`the row function of a transform failed: ${describeCause(cause)}`, "fix the function passed to mapRows (it threw on one of the rows)", cause)
        }
        if (mapped === null || mapped === undefined) continue
        for (const key in mapped) {
          if (!columns.has(key)) throw unknownKey(key, schema, outputSchema !== undefined)
        }
        rows.push(mapped)
      }
      try {
        return makeBatch(
          schema,
          schema.columns.map((column) => rows.map((row) => row[column.name] ?? null))
        )
      } catch (cause) {
        if (!(cause instanceof InvalidValue)) throw cause
        throw new PluginError({
          plugin: "mapRows",
          message: `a mapRows transform returned a value of the wrong type: ${cause.message}`,
          hint: "return the column's logical type in Rivet's representation (docs/api.md, \"Values\"), or declare another type for the column in mapRows's output schema",
          quoted: [cause.message]
        })
      }
    }
    return {
      schema,
      batches: input.batches.pipe(
        Stream.mapEffect((batch) =>
          Effect.try({
            try: () => mapBatch(batch),
            catch: (cause) =>
              cause instanceof PluginError
                ? cause
                : transformError(`a mapRows transform failed: ${describeCause(cause)}`, "report this with the transform that caused it", cause)
          })
        )
      )
    }
  }

const transformError = (message: string, hint: string, cause: unknown) =>
  new PluginError({ plugin: "mapRows", message, hint, ...defectDetail(cause) })

const unknownKey = (key: string, schema: BatchSchema, declared: boolean) =>
  transformError(
    `a mapRows transform returned a row with the key ${JSON.stringify(key)}, which is not an output column (${schema.columns
      .map((column) => column.name)
      .join(", ")})`,
    declared
      ? `add ${JSON.stringify(key)} to the output schema given to mapRows, or leave it out of the returned row`
      : `declare the column in mapRows's second argument, e.g. (schema) => ({ columns: [...schema.columns, { name: ${JSON.stringify(key)}, type: { kind: "string" } }] }), or leave it out of the returned row`,
    undefined
  )
