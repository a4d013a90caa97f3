import * as Effect from "effect/Effect"
import { type Batch, type BatchSchema, valueAt } from "../../runtime/batch.js"
import { FormatError } from "../../runtime/errors.js"
import type { PartEncoder } from "../../runtime/plugin.js"
import { type LineWriter, makeLineWriter } from "../text/lines.js"
import {
  columnRenderers,
  formatRenderFailure,
  jsonRenderer,
  type RenderFailure,
  type Renderer
} from "../text/render.js"

const failure = (message: string, hint?: string) =>
  new FormatError({ format: "ndjson", message, ...(hint === undefined ? {} : { hint }) })

/**
 * Checks that every column of `schema` can be written as NDJSON and returns the value renderers. Column names
 * must be unique: a JSON object with a repeated key loses all but one value in most readers.
 */
export const ndjsonRenderers = (schema: BatchSchema): Effect.Effect<ReadonlyArray<Renderer>, FormatError> => {
  const seen = new Set<string>()
  for (const column of schema.columns) {
    if (seen.has(column.name))
      return Effect.fail(
        failure(
          `NDJSON needs unique column names, and "${column.name}" appears more than once`,
          "give the columns distinct aliases in the query (SELECT a.id AS a_id, b.id AS b_id …)"
        )
      )
    seen.add(column.name)
  }
  return columnRenderers(schema.columns, jsonRenderer, "ndjson", "cast the column to a supported type in the query")
}

/** `{"a":` for the first column, `,"b":` for the next ones. */
const keyPrefixes = (schema: BatchSchema): ReadonlyArray<string> =>
  schema.columns.map((column, c) => `${c === 0 ? "{" : ","}${JSON.stringify(column.name)}:`)

const encodeRows = (
  batch: Batch,
  prefixes: ReadonlyArray<string>,
  values: ReadonlyArray<Renderer>,
  out: LineWriter
): RenderFailure | undefined => {
  const columns = batch.columns
  const types = batch.schema.columns.map((column) => column.type)
  const width = values.length
  const rowEnd = width === 0 ? "{}\n" : "}\n"
  let r = 0
  let c = 0
  try {
    for (r = 0; r < batch.rowCount; r++) {
      let line = ""
      for (c = 0; c < width; c++) {
        const value = valueAt(columns[c]!, types[c]!, r)
        line += prefixes[c]! + (value === null ? "null" : values[c]!(value))
      }
      out.write(line + rowEnd)
    }
  } catch (cause) {
    return { column: c, row: r, cause }
  }
  return undefined
}

/** An NDJSON part: one JSON object per row, each line ended by `\n`; a part without rows is empty. */
export const makeNdjsonEncoder = (schema: BatchSchema, values: ReadonlyArray<Renderer>): PartEncoder => {
  const prefixes = keyPrefixes(schema)
  const out = makeLineWriter()
  return {
    write: Effect.fn("NdjsonFormat.write")(function* (batch: Batch) {
      if (batch.columns.length !== values.length)
        return yield* failure(
          `a batch has ${batch.columns.length} columns but the part was opened with ${values.length}`
        )
      const failed = encodeRows(batch, prefixes, values, out)
      if (failed === undefined) return out.take()
      out.take()
      return yield* failure(formatRenderFailure(schema, failed), "the source produced a value of the wrong type")
    }),
    finish: Effect.succeed([])
  }
}
