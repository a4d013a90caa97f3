import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { IcebergPartitionSpec } from "./partition.js"
import type { IcebergSchema } from "./schema.js"

/** A snapshot as table metadata lists it. */
export interface Snapshot {
  readonly "snapshot-id": number
  readonly "parent-snapshot-id"?: number | undefined
  readonly "sequence-number": number
  readonly "timestamp-ms": number
  readonly "manifest-list": string
  readonly summary: Readonly<Record<string, string>> & { readonly operation: string }
  readonly "schema-id"?: number | undefined
}

/** Iceberg table metadata, format version 2 (the fields Rivet reads and writes; others are carried over as they are). */
export interface TableMetadata {
  readonly "format-version": 2
  readonly "table-uuid": string
  readonly location: string
  readonly "last-sequence-number": number
  readonly "last-updated-ms": number
  readonly "last-column-id": number
  readonly "current-schema-id": number
  readonly schemas: ReadonlyArray<IcebergSchema>
  readonly "default-spec-id": number
  readonly "partition-specs": ReadonlyArray<IcebergPartitionSpec>
  readonly "last-partition-id": number
  readonly "default-sort-order-id": number
  readonly "sort-orders": ReadonlyArray<unknown>
  readonly properties?: Readonly<Record<string, string>> | undefined
  readonly "current-snapshot-id"?: number | null | undefined
  readonly refs?: Readonly<Record<string, { readonly "snapshot-id": number; readonly type: string }>> | undefined
  readonly snapshots?: ReadonlyArray<Snapshot> | undefined
  readonly "snapshot-log"?: ReadonlyArray<{ readonly "timestamp-ms": number; readonly "snapshot-id": number }> | undefined
  readonly "metadata-log"?: ReadonlyArray<{ readonly "timestamp-ms": number; readonly "metadata-file": string }> | undefined
}

const Int = Schema.Number.pipe(Schema.int())

/** What Rivet checks of metadata it reads before extending it; the rest of the document is kept as it is. */
const TableMetadataShape = Schema.Struct({
  "format-version": Schema.Literal(2),
  "table-uuid": Schema.String,
  location: Schema.String,
  "last-sequence-number": Int,
  "last-column-id": Int,
  "current-schema-id": Int,
  schemas: Schema.Array(Schema.Struct({ "schema-id": Int, fields: Schema.Array(Schema.Struct({ id: Int, name: Schema.String })) })),
  "default-spec-id": Int,
  "partition-specs": Schema.Array(Schema.Struct({ "spec-id": Int, fields: Schema.Array(Schema.Unknown) })),
  "last-partition-id": Int,
  "current-snapshot-id": Schema.optional(Schema.NullOr(Int)),
  snapshots: Schema.optional(Schema.Array(Schema.Struct({ "snapshot-id": Int, "manifest-list": Schema.String, summary: Schema.Struct({ operation: Schema.String }) })))
})

/** Parses a metadata file; a message saying what is wrong with it when it is not format-v2 metadata Rivet can extend. */
export const parseTableMetadata = (bytes: Uint8Array): Either.Either<TableMetadata, string> => {
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder().decode(bytes))
  } catch (cause) {
    return Either.left(`it is not JSON (${cause instanceof Error ? cause.message : String(cause)})`)
  }
  return Schema.decodeUnknownEither(TableMetadataShape, { onExcessProperty: "preserve" })(json).pipe(
    Either.mapBoth({
      onLeft: (error) => ParseResult.TreeFormatter.formatErrorSync(error),
      // The shape checked above is the part of TableMetadata Rivet relies on; the rest is carried over untouched.
      onRight: (metadata) => metadata as unknown as TableMetadata
    })
  )
}

export const currentSchema = (metadata: TableMetadata): IcebergSchema | undefined =>
  metadata.schemas.find((schema) => schema["schema-id"] === metadata["current-schema-id"])

export const currentSnapshot = (metadata: TableMetadata): Snapshot | undefined => {
  const id = metadata["current-snapshot-id"]
  return id === undefined || id === null || id < 0 ? undefined : metadata.snapshots?.find((snapshot) => snapshot["snapshot-id"] === id)
}

export const encodeTableMetadata = (metadata: TableMetadata): Uint8Array => new TextEncoder().encode(`${JSON.stringify(metadata, null, 2)}\n`)
