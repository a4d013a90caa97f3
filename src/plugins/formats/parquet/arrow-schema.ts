import * as Arrow from "apache-arrow"
import type { BatchSchema, LogicalType } from "../../../core/batch.js"

/**
 * The `ARROW:schema` footer entry: the Arrow schema of the file as an IPC schema message (continuation marker,
 * length, flatbuffer), base64 — what pyarrow and arrow-rs write and read back, so Arrow readers get the exact
 * types the Parquet annotations cannot say: `uuid` and `json` as the canonical extension types `arrow.uuid`
 * (FixedSizeBinary(16)) and `arrow.json` (Utf8), int16 as Int16, decimals as Decimal128/256.
 */
const extension = (name: string): Map<string, string> =>
  new Map([
    ["ARROW:extension:name", name],
    ["ARROW:extension:metadata", ""]
  ])

const field = (name: string, type: LogicalType): Arrow.Field => {
  switch (type.kind) {
    case "uuid":
      return new Arrow.Field(name, new Arrow.FixedSizeBinary(16), true, extension("arrow.uuid"))
    case "json":
      return new Arrow.Field(name, new Arrow.Utf8(), true, extension("arrow.json"))
    case "list":
      // The element field is named as the Parquet schema names it, so readers match the two.
      return new Arrow.Field(name, new Arrow.List(field("element", type.element)), true)
    default:
      return new Arrow.Field(name, scalarType(type), true)
  }
}

const scalarType = (type: Exclude<LogicalType, { kind: "uuid" | "json" | "list" }>): Arrow.DataType => {
  switch (type.kind) {
    case "int16":
      return new Arrow.Int16()
    case "int32":
      return new Arrow.Int32()
    case "int64":
      return new Arrow.Int64()
    case "float32":
      return new Arrow.Float32()
    case "float64":
      return new Arrow.Float64()
    case "decimal":
      return new Arrow.Decimal(type.scale, type.precision, type.precision <= 38 ? 128 : 256)
    case "bool":
      return new Arrow.Bool()
    case "date":
      return new Arrow.DateDay()
    case "time":
      return new Arrow.TimeMicrosecond()
    case "timestamp":
      return new Arrow.TimestampMicrosecond()
    case "timestamptz":
      return new Arrow.TimestampMicrosecond("UTC")
    case "bytes":
      return new Arrow.Binary()
    case "string":
    case "interval":
      return new Arrow.Utf8()
  }
}

/** End-of-stream marker after the schema message of an IPC stream with no batches. */
const END_OF_STREAM_BYTES = 8

export const arrowSchemaEntry = (schema: BatchSchema): string => {
  const arrow = new Arrow.Schema(schema.columns.map((column) => field(column.name, column.type)))
  const stream = Arrow.tableToIPC(new Arrow.Table(arrow), "stream")
  return Buffer.from(stream.subarray(0, stream.length - END_OF_STREAM_BYTES)).toString("base64")
}
