import { stringify } from "csv-stringify/sync"
import * as Effect from "effect/Effect"
import { type Batch, type BatchSchema, type LogicalType, valueAt } from "../../runtime/batch.js"
import { FormatError } from "../../runtime/errors.js"
import type { PartEncoder } from "../../runtime/plugin.js"
import { type LineWriter, makeLineWriter } from "../text/lines.js"
import {
  columnRenderers,
  formatRenderFailure,
  type RenderFailure,
  type Renderer,
  textRenderer
} from "../text/render.js"

/**
 * csv-stringify options for RFC 4180 with `\n` records: quote only when needed, and quote the empty string
 * (`/^$/` matches nothing else) so that it stays distinct from NULL, which is an empty unquoted field.
 */
const QUOTING = { quoted_match: /^$/, quote_record_delimiter: true, eof: false } as const

// csv-stringify leaves a non-empty field without these characters unchanged.
const NEEDS_QUOTING_CHECK = /[",\r\n]/

/**
 * What csv-stringify does with QUOTING to a field that is empty or holds one of those characters: double the
 * quotes and wrap the field in quotes (test/formats/csv pins the equivalence). A library call per field costs
 * ~1.6 µs and an options object, which made CSV encoding slower than reading from PostgreSQL.
 */
const quoteField = (text: string): string => `"${text.includes('"') ? text.replaceAll('"', '""') : text}"`

const checked =
  (render: Renderer): Renderer =>
  (value) => {
    const text = render(value)
    return text === "" || NEEDS_QUOTING_CHECK.test(text) ? quoteField(text) : text
  }

// Rendered as digits, signs, `.`, `:`, `-`, `T`, `Z` and letters only, never empty: always a valid bare field.
const BARE_KINDS: ReadonlySet<LogicalType["kind"]> = new Set([
  "int16",
  "int32",
  "int64",
  "float32",
  "float64",
  "bool",
  "date",
  "time",
  "timestamp",
  "timestamptz"
])

/** The CSV field renderer for a type: its text rendering, quoted by csv-stringify when RFC 4180 requires it. */
export const csvFieldRenderer = (type: LogicalType): Renderer | undefined => {
  const render = textRenderer(type)
  return render && (BARE_KINDS.has(type.kind) ? render : checked(render))
}

/** The header line: column names, quoted as needed. */
export const csvHeader = (schema: BatchSchema): string =>
  stringify([schema.columns.map((column) => column.name)], { ...QUOTING, eof: true })

const encodeRows = (
  batch: Batch,
  fields: ReadonlyArray<Renderer>,
  out: LineWriter
): RenderFailure | undefined => {
  const columns = batch.columns
  const types = batch.schema.columns.map((column) => column.type)
  const width = fields.length
  let r = 0
  let c = 0
  try {
    for (r = 0; r < batch.rowCount; r++) {
      let line = ""
      for (c = 0; c < width; c++) {
        const value = valueAt(columns[c]!, types[c]!, r)
        if (c > 0) line += ","
        if (value !== null) line += fields[c]!(value)
      }
      out.write(line + "\n")
    }
  } catch (cause) {
    return { column: c, row: r, cause }
  }
  return undefined
}

const failure = (message: string, hint?: string) =>
  new FormatError({ format: "csv", message, ...(hint === undefined ? {} : { hint }) })

/** Checks that every column of `schema` can be written as CSV and returns the field renderers. */
export const csvRenderers = (schema: BatchSchema): Effect.Effect<ReadonlyArray<Renderer>, FormatError> => {
  if (schema.columns.length === 0)
    return Effect.fail(failure("CSV needs at least one column", "select at least one column in the export's query"))
  return columnRenderers(
    schema.columns,
    csvFieldRenderer,
    "csv",
    "cast the column to a supported type in the query, or use `format: parquet`"
  )
}

/** A CSV part: the header first (also in a part without rows), then one line per row. */
export const makeCsvEncoder = (schema: BatchSchema, fields: ReadonlyArray<Renderer>): PartEncoder => {
  const out = makeLineWriter()
  let header: string | undefined = csvHeader(schema)
  const writeHeader = () => {
    if (header === undefined) return
    out.write(header)
    header = undefined
  }
  return {
    write: Effect.fn("CsvFormat.write")(function* (batch: Batch) {
      if (batch.columns.length !== fields.length)
        return yield* failure(
          `a batch has ${batch.columns.length} columns but the part was opened with ${fields.length}`
        )
      writeHeader()
      const failed = encodeRows(batch, fields, out)
      if (failed === undefined) return out.take()
      out.take()
      return yield* failure(formatRenderFailure(schema, failed), "the source produced a value of the wrong type")
    }),
    finish: Effect.sync(() => {
      writeHeader()
      return out.take()
    }).pipe(Effect.withSpan("CsvFormat.finish"))
  }
}
