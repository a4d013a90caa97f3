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
    /** How rows were selected: full, incremental, chunked, keyset or time_window. */
    mode: Schema.String,
    /** Incremental runs: the cursor position this run reached. */
    cursor: Schema.optional(Schema.Struct({ column: Schema.String, value: Schema.String }))
  }),
  destination: Schema.Struct({ type: Schema.String, uri: Schema.String }),
  format: Schema.String,
  compression: Schema.String,
  schema: Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String })),
  schema_fingerprint: Schema.String,
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

/** UTF-8 text appended into one growing buffer. */
class Utf8Writer {
  private buf = new Uint8Array(64 * 1024)
  private length = 0
  private readonly encoder = new TextEncoder()

  write(text: string): void {
    // A UTF-16 unit takes at most 3 UTF-8 bytes.
    if (this.length + text.length * 3 > this.buf.length) {
      let capacity = this.buf.length * 2
      while (capacity < this.length + text.length * 3) capacity *= 2
      const grown = new Uint8Array(capacity)
      grown.set(this.buf.subarray(0, this.length))
      this.buf = grown
    }
    this.length += this.encoder.encodeInto(text, this.buf.subarray(this.length)).written
  }

  bytes(): Uint8Array {
    return this.buf.slice(0, this.length)
  }
}

const PARTS_MARKER = JSON.stringify("\u0000parts\u0000")

/**
 * The exact bytes written as `manifest.json`: `JSON.stringify(manifest, null, 2)` and a newline, byte for byte, but
 * written part by part — a partitioned export lists tens of thousands of parts, and one string of them all (with
 * its copies) was the peak of such a run.
 */
export const encodeManifest = (manifest: Manifest): Uint8Array => {
  const head = JSON.stringify({ ...manifest, parts: "\u0000parts\u0000" }, null, 2)
  const at = head.indexOf(PARTS_MARKER)
  const out = new Utf8Writer()
  if (at < 0 || head.indexOf(PARTS_MARKER, at + 1) >= 0 || manifest.parts.length === 0) {
    out.write(`${JSON.stringify(manifest, null, 2)}\n`)
    return out.bytes()
  }
  out.write(`${head.slice(0, at)}[`)
  manifest.parts.forEach((part, index) => {
    // An element of `parts` sits two levels deep: each of its lines is indented by four more spaces.
    out.write(`${index === 0 ? "" : ","}\n    ${JSON.stringify(part, null, 2).replaceAll("\n", "\n    ")}`)
  })
  out.write(`\n  ]${head.slice(at + PARTS_MARKER.length)}\n`)
  return out.bytes()
}

/** The `_SUCCESS` body: `sha256:<hex of the manifest bytes>\n`. */
export const encodeSuccessMarker = (manifestBytes: Uint8Array): Uint8Array =>
  new TextEncoder().encode(`sha256:${sha256Hex(manifestBytes)}\n`)
