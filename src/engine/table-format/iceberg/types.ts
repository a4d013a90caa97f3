import { formatLogicalType, type LogicalType } from "../../../core/batch.js"

/** Iceberg's widest decimal: its precision is at most 38 digits (16 bytes). */
export const MAX_ICEBERG_DECIMAL_PRECISION = 38

/** An Iceberg type as table metadata spells it: a primitive's name, or a list. */
export type IcebergType =
  | string
  | { readonly type: "list"; readonly "element-id": number; readonly element: IcebergType; readonly "element-required": boolean }

/**
 * Rivet's logical type as an Iceberg primitive, or why it has none (docs/formats/iceberg.md, "Types"). json and
 * interval are text in the data files, so a string to every reader.
 */
export const icebergPrimitive = (type: LogicalType): { readonly type: string } | { readonly refused: string } => {
  switch (type.kind) {
    case "int16":
    case "int32":
      return { type: "int" }
    case "int64":
      return { type: "long" }
    case "float32":
      return { type: "float" }
    case "float64":
      return { type: "double" }
    case "decimal":
      return type.precision <= MAX_ICEBERG_DECIMAL_PRECISION
        ? { type: `decimal(${type.precision}, ${type.scale})` }
        : { refused: `${formatLogicalType(type)} is wider than Iceberg's decimals (precision at most ${MAX_ICEBERG_DECIMAL_PRECISION})` }
    case "string":
    case "json":
    case "interval":
      return { type: "string" }
    case "bool":
      return { type: "boolean" }
    case "date":
    case "time":
    case "timestamp":
    case "timestamptz":
    case "uuid":
      return { type: type.kind }
    case "bytes":
      return { type: "binary" }
    case "list":
      return type.element.kind === "list"
        ? { refused: `${formatLogicalType(type)}: lists of lists are not written to Iceberg tables` }
        : icebergPrimitive(type.element)
  }
}

/**
 * The logical type the data file is written with: json and interval become plain strings, so that readers of the
 * table see the text its Iceberg type (string) promises rather than a JSON annotation some parse into objects.
 */
export const fileType = (type: LogicalType): LogicalType => {
  if (type.kind === "json" || type.kind === "interval") return { kind: "string" }
  if (type.kind === "list") return { kind: "list", element: fileType(type.element) }
  return type
}
