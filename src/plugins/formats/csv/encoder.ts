import { stringify } from "csv-stringify/sync"
import * as Effect from "effect/Effect"
import { type Batch, type BatchSchema, formatLogicalType } from "../../../core/batch.js"
import { FormatError } from "../../../core/errors.js"
import type { PartEncoder, RenderedPartEncoder } from "../../../core/plugin.js"
import { csvField, type FieldFactory, type FieldWriter } from "../text/fields.js"
import { batchProblem } from "../text/layout.js"
import { ByteOut } from "../text/out.js"

const COMMA = 0x2c
const LF = 0x0a

/** The header line: column names, quoted as RFC 4180 needs (and the empty name as `""`), ended by `\n`. */
export const csvHeader = (schema: BatchSchema): string =>
  stringify([schema.columns.map((column) => column.name)], {
    quoted_match: /^$/,
    quote_record_delimiter: true,
    eof: true
  })

const failure = (message: string, hint?: string) =>
  new FormatError({ format: "csv", message, ...(hint === undefined ? {} : { hint }) })

/** Checks that every column of `schema` can be written as CSV and returns the field renderers. */
export const csvFields = (schema: BatchSchema): Effect.Effect<ReadonlyArray<FieldFactory>, FormatError> => {
  if (schema.columns.length === 0)
    return Effect.fail(failure("CSV needs at least one column", "select at least one column in the export's query"))
  const fields: Array<FieldFactory> = []
  for (const column of schema.columns) {
    const field = csvField(column.type)
    if (field === undefined)
      return Effect.fail(
        failure(
          `CSV cannot encode column "${column.name}" of type ${formatLogicalType(column.type)}`,
          "cast the column to a supported type in the query, or use `format: parquet`"
        )
      )
    fields.push(field)
  }
  return Effect.succeed(fields)
}

const encodeRows = (batch: Batch, fields: ReadonlyArray<FieldFactory>, out: ByteOut): void => {
  const width = fields.length
  const writers: Array<FieldWriter> = []
  const validity: Array<Uint8Array | undefined> = []
  for (let c = 0; c < width; c++) {
    writers.push(fields[c]!(batch.columns[c]!))
    validity.push(batch.columns[c]!.validity)
  }
  for (let r = 0; r < batch.rowCount; r++) {
    for (let c = 0; c < width; c++) {
      if (c > 0) out.byte(COMMA)
      const valid = validity[c]
      if (valid === undefined || (valid[r >>> 3]! & (1 << (r & 7))) !== 0) writers[c]!(out, r)
    }
    out.byte(LF)
  }
}

/**
 * Rows from `from` on, each kept only while the part stays within `maxBytes` (`handed` bytes already left the
 * part); the first row of a part without rows is kept whatever its size. Returns the rows kept.
 */
const encodeRowsWithin = (
  batch: Batch,
  fields: ReadonlyArray<FieldFactory>,
  out: ByteOut,
  from: number,
  limit: { readonly handed: number; readonly maxBytes: number; readonly partRows: number }
): number => {
  const width = fields.length
  const writers = fields.map((field, c) => field(batch.columns[c]!))
  const validity = batch.columns.map((column) => column.validity)
  let r = from
  for (; r < batch.rowCount; r++) {
    const start = out.pos
    for (let c = 0; c < width; c++) {
      if (c > 0) out.byte(COMMA)
      const valid = validity[c]
      if (valid === undefined || (valid[r >>> 3]! & (1 << (r & 7))) !== 0) writers[c]!(out, r)
    }
    out.byte(LF)
    if (limit.handed + out.pos > limit.maxBytes && (r > from || limit.partRows > 0)) {
      out.pos = start
      break
    }
  }
  return r - from
}

/** A CSV part: the header first (also in a part without rows), then one line per row. */
export const makeCsvEncoder = (schema: BatchSchema, fields: ReadonlyArray<FieldFactory>): PartEncoder => {
  const out = new ByteOut()
  let header: Uint8Array | undefined = Buffer.from(csvHeader(schema), "utf8")
  const writeHeader = () => {
    if (header === undefined) return
    out.copy(header, 0, header.length)
    header = undefined
  }
  // Bytes handed on and rows written, for `writeCapped`.
  let handed = 0
  let partRows = 0
  const take = () => {
    const bytes = out.take()
    for (const chunk of bytes) handed += chunk.byteLength
    return bytes
  }
  return {
    write: Effect.fn("CsvFormat.write")(function* (batch: Batch) {
      const problem = batchProblem(schema, batch)
      if (problem !== undefined) return yield* failure(problem.message, problem.hint)
      writeHeader()
      encodeRows(batch, fields, out)
      return out.take()
    }),
    writeCapped: Effect.fn("CsvFormat.writeCapped")(function* (batch: Batch, from: number, maxBytes: number) {
      const problem = batchProblem(schema, batch)
      if (problem !== undefined) return yield* failure(problem.message, problem.hint)
      writeHeader()
      const rows = encodeRowsWithin(batch, fields, out, from, { handed, maxBytes, partRows })
      partRows += rows
      return { bytes: take(), rows }
    }),
    finish: Effect.sync(() => {
      writeHeader()
      return out.take()
    }).pipe(Effect.withSpan("CsvFormat.finish"))
  }
}

/** A CSV part from rows the source rendered in the CSV dialect: the header, then the rows as they are. */
export const makeRenderedCsvEncoder = (schema: BatchSchema): RenderedPartEncoder => {
  let header: Uint8Array | undefined = Buffer.from(csvHeader(schema), "utf8")
  const withHeader = (rows: ReadonlyArray<Uint8Array>): ReadonlyArray<Uint8Array> => {
    if (header === undefined) return rows
    const first = header
    header = undefined
    return [first, ...rows]
  }
  return {
    write: (rows) => Effect.sync(() => withHeader(rows.byteLength === 0 ? [] : [rows])),
    finish: Effect.sync(() => withHeader([]))
  }
}

/** Opens an uncompressed CSV part from batches (on the reading thread or the encoder thread). */
export const csvPartOpener = (schema: BatchSchema): Effect.Effect<PartEncoder, FormatError> =>
  Effect.map(csvFields(schema), (fields) => makeCsvEncoder(schema, fields))
