import { createHash } from "node:crypto"
import * as Schema from "effect/Schema"
import { type BatchSchema, formatLogicalType } from "./batch.js"
import { invalidKeyReason } from "./keys.js"

const Count = Schema.Int.pipe(Schema.nonNegative())

/** One committed output object, as recorded in `manifest.json`. */
export const PartRecord = Schema.Struct({
  /** Key relative to the destination root. */
  path: Schema.String.pipe(Schema.filter((path) => invalidKeyReason(path) ?? true)),
  rows: Count,
  size_bytes: Count,
  /** `sha256:<hex>` of the exact bytes, computed while streaming. */
  content_fingerprint: Schema.String.pipe(
    Schema.pattern(/^sha256:[0-9a-f]{64}$/, { message: () => "expected sha256:<64 lowercase hex digits>" })
  ),
  /**
   * Partitioned exports: the part's partition values by directory key (`{country: "FR", created_at_month:
   * "2024-05"}`), null for the default partition (NULL or empty); `path` holds them as `key=value/` directories.
   */
  partition: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.NullOr(Schema.String) }))
})
export type PartRecord = typeof PartRecord.Type

/** A part's manifest fields alone (a state store's record of it carries more). */
export const toPartRecord = (part: PartRecord): PartRecord => ({
  path: part.path,
  rows: part.rows,
  size_bytes: part.size_bytes,
  content_fingerprint: part.content_fingerprint,
  ...(part.partition !== undefined ? { partition: part.partition } : {})
})

/**
 * The content of `manifest.json`, written after every part is committed and before `_SUCCESS`; `rivet validate`
 * reads it back with the same schema.
 */
export const Manifest = Schema.Struct({
  manifest_version: Schema.Literal(1),
  run_id: Schema.String,
  export_name: Schema.String,
  started_at: Schema.String,
  finished_at: Schema.String,
  status: Schema.Literal("success"),
  source: Schema.Struct({
    type: Schema.String,
    schema: Schema.optional(Schema.String),
    table: Schema.optional(Schema.String),
    query: Schema.optional(Schema.String),
    /** How rows were selected: full, incremental, chunked, keyset, time_window or cdc. */
    mode: Schema.String,
    /** Incremental runs: the cursor position this run reached. */
    cursor: Schema.optional(Schema.Struct({ column: Schema.String, value: Schema.String }))
  }),
  destination: Schema.Struct({ type: Schema.String, uri: Schema.String }),
  format: Schema.String,
  compression: Schema.String,
  schema: Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String })),
  schema_fingerprint: Schema.String,
  /** Columns masked before they were written: how, and with which key (its id, never the key). */
  masked_columns: Schema.optional(
    Schema.Array(Schema.Struct({ column: Schema.String, method: Schema.String, key_id: Schema.optional(Schema.String) }))
  ),
  row_count: Count,
  part_count: Count,
  parts: Schema.Array(PartRecord)
})
export type Manifest = typeof Manifest.Type

export const sha256Hex = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex")

export const schemaEntries = (schema: BatchSchema) =>
  schema.columns.map((column) => ({ name: column.name, type: formatLogicalType(column.type) }))

/** `sha256:` of the canonical `[{name,type}]` JSON — equal schemas give equal fingerprints. */
export const schemaFingerprint = (schema: BatchSchema): string =>
  `sha256:${sha256Hex(JSON.stringify(schemaEntries(schema)))}`

const PARTS_PLACEHOLDER = "\u0000parts\u0000"
const PARTS_MARKER = JSON.stringify(PARTS_PLACEHOLDER)

/**
 * The exact bytes written as `manifest.json`: `JSON.stringify(manifest, null, 2)` and a newline, byte for byte, but
 * rendered part by part into one buffer of the exact size — a partitioned export lists tens of thousands of parts,
 * and one string of them all (or a string per part, kept until the end) was the peak of such a run. The pieces are
 * rendered twice, once to size the buffer and once to fill it, so each is garbage as soon as it is used.
 */
export const encodeManifest = (manifest: Manifest): Uint8Array => {
  const head = JSON.stringify({ ...manifest, parts: PARTS_PLACEHOLDER }, null, 2)
  const at = head.indexOf(PARTS_MARKER)
  // No parts (`[]` on one line), or another value holding the placeholder: the whole string at once.
  if (at < 0 || head.indexOf(PARTS_MARKER, at + 1) >= 0 || manifest.parts.length === 0) {
    return Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, "utf8")
  }
  const pieces = function* () {
    yield `${head.slice(0, at)}[`
    for (const [index, part] of manifest.parts.entries()) {
      // An element of `parts` sits two levels deep: each of its lines is indented by four more spaces.
      yield `${index === 0 ? "" : ","}\n    ${JSON.stringify(part, null, 2).replaceAll("\n", "\n    ")}`
    }
    yield `\n  ]${head.slice(at + PARTS_MARKER.length)}\n`
  }
  let size = 0
  for (const piece of pieces()) size += Buffer.byteLength(piece, "utf8")
  const bytes = Buffer.allocUnsafeSlow(size)
  let offset = 0
  for (const piece of pieces()) offset += bytes.write(piece, offset, "utf8")
  return bytes
}

/** The `_SUCCESS` body: `sha256:<hex of the manifest bytes>\n`. */
export const encodeSuccessMarker = (manifestBytes: Uint8Array): Uint8Array =>
  new TextEncoder().encode(`sha256:${sha256Hex(manifestBytes)}\n`)
