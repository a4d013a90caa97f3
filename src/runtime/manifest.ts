import { createHash } from "node:crypto"
import { type BatchSchema, formatLogicalType } from "./batch.js"

/** One committed output object, as recorded in `manifest.json`. */
export interface PartRecord {
  /** Key relative to the destination root. */
  readonly path: string
  readonly rows: number
  readonly size_bytes: number
  /** `sha256:<hex>` of the exact bytes, computed while streaming. */
  readonly content_fingerprint: string
}

/** The content of `manifest.json`, written after every part is committed and before `_SUCCESS`. */
export interface Manifest {
  readonly manifest_version: 1
  readonly run_id: string
  readonly export_name: string
  readonly started_at: string
  readonly finished_at: string
  readonly status: "success"
  readonly source: {
    readonly type: string
    readonly schema?: string | undefined
    readonly table?: string | undefined
    readonly query?: string | undefined
    /** How rows were selected: full, incremental, chunked, keyset or time_window. */
    readonly mode: string
    /** Incremental runs: the cursor position this run reached. */
    readonly cursor?: { readonly column: string; readonly value: string } | undefined
  }
  readonly destination: { readonly type: string; readonly uri: string }
  readonly format: string
  readonly compression: string
  readonly schema: ReadonlyArray<{ readonly name: string; readonly type: string }>
  readonly schema_fingerprint: string
  readonly row_count: number
  readonly part_count: number
  readonly parts: ReadonlyArray<PartRecord>
}

export const sha256Hex = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex")

export const schemaEntries = (schema: BatchSchema) =>
  schema.columns.map((column) => ({ name: column.name, type: formatLogicalType(column.type) }))

/** `sha256:` of the canonical `[{name,type}]` JSON — equal schemas give equal fingerprints. */
export const schemaFingerprint = (schema: BatchSchema): string =>
  `sha256:${sha256Hex(JSON.stringify(schemaEntries(schema)))}`

/** The exact bytes written as `manifest.json` (2-space pretty JSON, trailing newline). */
export const encodeManifest = (manifest: Manifest): Uint8Array =>
  new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`)

/** The `_SUCCESS` body: `sha256:<hex of the manifest bytes>\n`. */
export const encodeSuccessMarker = (manifestBytes: Uint8Array): Uint8Array =>
  new TextEncoder().encode(`sha256:${sha256Hex(manifestBytes)}\n`)
