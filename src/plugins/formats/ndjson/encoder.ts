import * as Effect from "effect/Effect"
import { type Batch, type BatchSchema, formatLogicalType } from "../../../core/batch.js"
import { FormatError } from "../../../core/errors.js"
import type { PartEncoder } from "../../../core/plugin.js"
import { type FieldFactory, type FieldWriter, jsonField } from "../text/fields.js"
import { batchProblem } from "../text/layout.js"
import { ByteOut, type Viewed, viewed } from "../text/out.js"

const failure = (message: string, hint?: string) =>
  new FormatError({ format: "ndjson", message, ...(hint === undefined ? {} : { hint }) })

/**
 * Checks that every column of `schema` can be written as NDJSON and returns the value renderers. Column names
 * must be unique: a JSON object with a repeated key loses all but one value in most readers.
 */
export const ndjsonFields = (schema: BatchSchema): Effect.Effect<ReadonlyArray<FieldFactory>, FormatError> => {
  const seen = new Set<string>()
  const fields: Array<FieldFactory> = []
  for (const column of schema.columns) {
    if (seen.has(column.name))
      return Effect.fail(
        failure(
          `NDJSON needs unique column names, and "${column.name}" appears more than once`,
          "give the columns distinct aliases in the query (SELECT a.id AS a_id, b.id AS b_id …)"
        )
      )
    seen.add(column.name)
    const field = jsonField(column.type)
    if (field === undefined)
      return Effect.fail(
        failure(
          `NDJSON cannot encode column "${column.name}" of type ${formatLogicalType(column.type)}`,
          "cast the column to a supported type in the query"
        )
      )
    fields.push(field)
  }
  return Effect.succeed(fields)
}

/** `{"a":` for the first column, `,"b":` for the next ones, then `suffix`, as UTF-8. */
const keyPrefixes = (schema: BatchSchema, suffix = ""): ReadonlyArray<Viewed> =>
  schema.columns.map((column, c) =>
    viewed(new TextEncoder().encode(`${c === 0 ? "{" : ","}${JSON.stringify(column.name)}:${suffix}`))
  )

const encodeRows = (
  batch: Batch,
  prefixes: ReadonlyArray<Viewed>,
  nulls: ReadonlyArray<Viewed>,
  fields: ReadonlyArray<FieldFactory>,
  rowEnd: Uint8Array,
  out: ByteOut
): void => {
  const width = fields.length
  const writers: Array<FieldWriter> = []
  const validity: Array<Uint8Array | undefined> = []
  for (let c = 0; c < width; c++) {
    writers.push(fields[c]!(batch.columns[c]!))
    validity.push(batch.columns[c]!.validity)
  }
  for (let r = 0; r < batch.rowCount; r++) {
    for (let c = 0; c < width; c++) {
      const valid = validity[c]
      const present = valid === undefined || (valid[r >>> 3]! & (1 << (r & 7))) !== 0
      const prefix = present ? prefixes[c]! : nulls[c]!
      out.copyViewed(prefix, 0, prefix.data.length)
      if (present) writers[c]!(out, r)
    }
    out.copy(rowEnd, 0, rowEnd.length)
  }
}

/**
 * Rows from `from` on, each kept only while the part stays within `maxBytes` (`handed` bytes already left the
 * part); the first row of a part without rows is kept whatever its size. Returns the rows kept.
 */
const encodeRowsWithin = (
  batch: Batch,
  text: { readonly prefixes: ReadonlyArray<Viewed>; readonly nulls: ReadonlyArray<Viewed>; readonly rowEnd: Uint8Array },
  fields: ReadonlyArray<FieldFactory>,
  out: ByteOut,
  from: number,
  limit: { readonly handed: number; readonly maxBytes: number; readonly partRows: number }
): number => {
  const { prefixes, nulls, rowEnd } = text
  const width = fields.length
  const writers = fields.map((field, c) => field(batch.columns[c]!))
  const validity = batch.columns.map((column) => column.validity)
  let r = from
  for (; r < batch.rowCount; r++) {
    const start = out.pos
    for (let c = 0; c < width; c++) {
      const valid = validity[c]
      const present = valid === undefined || (valid[r >>> 3]! & (1 << (r & 7))) !== 0
      const prefix = present ? prefixes[c]! : nulls[c]!
      out.copyViewed(prefix, 0, prefix.data.length)
      if (present) writers[c]!(out, r)
    }
    out.copy(rowEnd, 0, rowEnd.length)
    if (limit.handed + out.pos > limit.maxBytes && (r > from || limit.partRows > 0)) {
      out.pos = start
      break
    }
  }
  return r - from
}

/** An NDJSON part: one JSON object per row, each line ended by `\n`; a part without rows is empty. */
export const makeNdjsonEncoder = (schema: BatchSchema, fields: ReadonlyArray<FieldFactory>): PartEncoder => {
  const prefixes = keyPrefixes(schema)
  // A NULL's key and value in one copy.
  const nulls = keyPrefixes(schema, "null")
  const rowEnd = Buffer.from(fields.length === 0 ? "{}\n" : "}\n")
  const out = new ByteOut()
  // Bytes handed on and rows written, for `writeCapped`.
  let handed = 0
  let partRows = 0
  return {
    write: Effect.fn("NdjsonFormat.write")(function* (batch: Batch) {
      const problem = batchProblem(schema, batch)
      if (problem !== undefined) return yield* failure(problem.message, problem.hint)
      encodeRows(batch, prefixes, nulls, fields, rowEnd, out)
      return out.take()
    }),
    writeCapped: Effect.fn("NdjsonFormat.writeCapped")(function* (batch: Batch, from: number, maxBytes: number) {
      const problem = batchProblem(schema, batch)
      if (problem !== undefined) return yield* failure(problem.message, problem.hint)
      const rows = encodeRowsWithin(batch, { prefixes, nulls, rowEnd }, fields, out, from, { handed, maxBytes, partRows })
      partRows += rows
      const bytes = out.take()
      for (const chunk of bytes) handed += chunk.byteLength
      return { bytes, rows }
    }),
    finish: Effect.succeed([])
  }
}

/** Opens an uncompressed NDJSON part (on the reading thread or the encoder thread). */
export const ndjsonPartOpener = (schema: BatchSchema): Effect.Effect<PartEncoder, FormatError> =>
  Effect.map(ndjsonFields(schema), (fields) => makeNdjsonEncoder(schema, fields))
