import * as avro from "avsc"
import type { ColumnMetrics } from "./footer.js"
import { partitionAvroType, type IcebergPartitionSpec, type PartitionValue } from "./partition.js"
import type { IcebergField } from "./schema.js"

/** A data file as a manifest entry describes it. */
export interface DataFileEntry extends ColumnMetrics {
  /** Absolute location (`s3://…`, `file:/…`). */
  readonly path: string
  readonly recordCount: number
  readonly sizeBytes: number
  readonly partition: Readonly<Record<string, PartitionValue>>
}

/** What a manifest list says of one manifest (Iceberg's `manifest_file`, v2). */
export interface ManifestFileEntry {
  readonly path: string
  readonly length: number
  readonly specId: number
  readonly sequenceNumber: number
  readonly minSequenceNumber: number
  readonly addedSnapshotId: number
  readonly addedFiles: number
  readonly existingFiles: number
  readonly deletedFiles: number
  readonly addedRows: number
  readonly existingRows: number
  readonly deletedRows: number
  readonly partitions: ReadonlyArray<{ readonly containsNull: boolean; readonly lower: Uint8Array | null; readonly upper: Uint8Array | null }>
}

const required = (type: unknown, id: number, name: string) => ({ name, type, "field-id": id })

const optional = (type: unknown, id: number, name: string) => ({ name, type: ["null", type], default: null, "field-id": id })

/** Iceberg writes maps with non-string keys as Avro arrays of key/value records. */
const intMap = (keyId: number, valueId: number, value: string) => ({
  type: "array",
  logicalType: "map",
  items: {
    type: "record",
    name: `k${keyId}_v${valueId}`,
    fields: [
      { name: "key", type: "int", "field-id": keyId },
      { name: "value", type: value, "field-id": valueId }
    ]
  }
})

/** The spec's `manifest_entry` schema (format v2, data files) for a partition spec. */
export const manifestEntrySchema = (spec: IcebergPartitionSpec, fields: ReadonlyArray<IcebergField>) => ({
  type: "record",
  name: "manifest_entry",
  fields: [
    required("int", 0, "status"),
    optional("long", 1, "snapshot_id"),
    optional("long", 3, "sequence_number"),
    optional("long", 4, "file_sequence_number"),
    {
      name: "data_file",
      "field-id": 2,
      type: {
        type: "record",
        name: "r2",
        fields: [
          required("int", 134, "content"),
          required("string", 100, "file_path"),
          required("string", 101, "file_format"),
          {
            name: "partition",
            "field-id": 102,
            type: {
              type: "record",
              name: "r102",
              fields: spec.fields.map((field) => optional(partitionAvroType(field, fields), field["field-id"], field.name))
            }
          },
          required("long", 103, "record_count"),
          required("long", 104, "file_size_in_bytes"),
          optional(intMap(117, 118, "long"), 108, "column_sizes"),
          optional(intMap(119, 120, "long"), 109, "value_counts"),
          optional(intMap(121, 122, "long"), 110, "null_value_counts"),
          optional(intMap(138, 139, "long"), 137, "nan_value_counts"),
          optional(intMap(126, 127, "bytes"), 125, "lower_bounds"),
          optional(intMap(129, 130, "bytes"), 128, "upper_bounds"),
          optional("bytes", 131, "key_metadata"),
          optional({ type: "array", items: "long", "element-id": 133 }, 132, "split_offsets"),
          optional({ type: "array", items: "int", "element-id": 136 }, 135, "equality_ids"),
          optional("int", 140, "sort_order_id")
        ]
      }
    }
  ]
})

/** The spec's `manifest_file` schema (format v2): one record per manifest in a manifest list. */
export const manifestFileSchema = {
  type: "record",
  name: "manifest_file",
  fields: [
    required("string", 500, "manifest_path"),
    required("long", 501, "manifest_length"),
    required("int", 502, "partition_spec_id"),
    required("int", 517, "content"),
    required("long", 515, "sequence_number"),
    required("long", 516, "min_sequence_number"),
    required("long", 503, "added_snapshot_id"),
    required("int", 504, "added_files_count"),
    required("int", 505, "existing_files_count"),
    required("int", 506, "deleted_files_count"),
    required("long", 512, "added_rows_count"),
    required("long", 513, "existing_rows_count"),
    required("long", 514, "deleted_rows_count"),
    optional(
      {
        type: "array",
        "element-id": 508,
        items: {
          type: "record",
          name: "r508",
          fields: [
            required("boolean", 509, "contains_null"),
            optional("boolean", 518, "contains_nan"),
            optional("bytes", 510, "lower_bound"),
            optional("bytes", 511, "upper_bound")
          ]
        }
      },
      507,
      "partitions"
    ),
    optional("bytes", 519, "key_metadata")
  ]
}

/** An Avro object container file of `records`, with `metadata` in its header (uncompressed blocks). */
export const encodeAvroFile = (schema: object, records: ReadonlyArray<object>, metadata: Readonly<Record<string, string>>): Promise<Uint8Array> => {
  const type = avro.Type.forSchema(schema as avro.Schema)
  const encoder = new avro.streams.BlockEncoder(type, {
    codec: "null",
    metadata: Object.fromEntries(Object.entries(metadata).map(([key, value]) => [key, Buffer.from(value, "utf8")]))
  } as Partial<avro.EncoderOptions>)
  const chunks: Array<Buffer> = []
  return new Promise((resolve, reject) => {
    encoder.on("data", (chunk: Buffer) => chunks.push(chunk))
    encoder.on("error", reject)
    encoder.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))))
    for (const record of records) encoder.write(record)
    encoder.end()
  })
}

const mapEntries = <V>(map: ReadonlyMap<number, V>, wrap: (value: V) => unknown) =>
  map.size === 0 ? null : [...map].map(([key, value]) => ({ key, value: wrap(value) }))

/** A data file's manifest entry record: `status` 1 (added) in this snapshot, or 0 (existing) carried forward. */
export const manifestEntryRecord = (
  file: DataFileEntry,
  entry: { readonly status: 0 | 1 | 2; readonly snapshotId: number; readonly sequenceNumber: number; readonly fileSequenceNumber: number }
) => ({
  status: entry.status,
  snapshot_id: entry.snapshotId,
  sequence_number: entry.sequenceNumber,
  file_sequence_number: entry.fileSequenceNumber,
  data_file: {
    content: 0,
    file_path: file.path,
    file_format: "PARQUET",
    partition: file.partition,
    record_count: file.recordCount,
    file_size_in_bytes: file.sizeBytes,
    column_sizes: mapEntries(file.columnSizes, (value) => value),
    value_counts: mapEntries(file.valueCounts, (value) => value),
    null_value_counts: mapEntries(file.nullCounts, (value) => value),
    nan_value_counts: null,
    lower_bounds: mapEntries(file.lowerBounds, (value) => Buffer.from(value)),
    upper_bounds: mapEntries(file.upperBounds, (value) => Buffer.from(value)),
    key_metadata: null,
    split_offsets: null,
    equality_ids: null,
    sort_order_id: null
  }
})

export const manifestFileRecord = (entry: ManifestFileEntry) => ({
  manifest_path: entry.path,
  manifest_length: entry.length,
  partition_spec_id: entry.specId,
  content: 0,
  sequence_number: entry.sequenceNumber,
  min_sequence_number: entry.minSequenceNumber,
  added_snapshot_id: entry.addedSnapshotId,
  added_files_count: entry.addedFiles,
  existing_files_count: entry.existingFiles,
  deleted_files_count: entry.deletedFiles,
  added_rows_count: entry.addedRows,
  existing_rows_count: entry.existingRows,
  deleted_rows_count: entry.deletedRows,
  partitions: entry.partitions.map((summary) => ({
    contains_null: summary.containsNull,
    contains_nan: null,
    lower_bound: summary.lower === null ? null : Buffer.from(summary.lower),
    upper_bound: summary.upper === null ? null : Buffer.from(summary.upper)
  })),
  key_metadata: null
})

/** The records of an Avro object container file (a manifest list Rivet wrote before). */
export const decodeAvroFile = (bytes: Uint8Array): Promise<Array<Record<string, unknown>>> =>
  new Promise((resolve, reject) => {
    const records: Array<Record<string, unknown>> = []
    const decoder = new avro.streams.BlockDecoder()
    decoder.on("data", (record: Record<string, unknown>) => records.push(record))
    decoder.on("error", reject)
    decoder.on("end", () => resolve(records))
    decoder.end(Buffer.from(bytes))
  })
