/**
 * The logical types of columns and, at the edge (row objects, `makeBatch`), their values: lossless, one
 * representation per logical type:
 *
 * | logical type   | value                                                        |
 * |----------------|--------------------------------------------------------------|
 * | int16, int32   | `number`                                                     |
 * | int64          | `bigint`                                                     |
 * | float32/64     | `number` (NaN and ±Infinity allowed)                         |
 * | decimal(p,s)   | `string`, exact decimal text such as `"-12.30"`               |
 * | string         | `string`                                                     |
 * | bool           | `boolean`                                                    |
 * | date           | `number`, days since 1970-01-01                              |
 * | time           | `bigint`, microseconds since midnight                        |
 * | timestamp      | `bigint`, microseconds since 1970-01-01T00:00:00 (no zone)   |
 * | timestamptz    | `bigint`, microseconds since the Unix epoch, UTC             |
 * | uuid           | `string`, lowercase with hyphens                             |
 * | json           | `string`, the JSON text exactly as the source gave it        |
 * | bytes          | `Uint8Array`                                                 |
 * | interval       | `string`, ISO-8601 duration such as `"P1Y2M3DT4H5M6.5S"`       |
 * | list<T>        | `ReadonlyArray<Value of T | null>`                           |
 *
 * `null` is SQL NULL in every column.
 */
export type LogicalType =
  | { readonly kind: "int16" }
  | { readonly kind: "int32" }
  | { readonly kind: "int64" }
  | { readonly kind: "float32" }
  | { readonly kind: "float64" }
  | { readonly kind: "decimal"; readonly precision: number; readonly scale: number }
  | { readonly kind: "string" }
  | { readonly kind: "bool" }
  | { readonly kind: "date" }
  | { readonly kind: "time" }
  | { readonly kind: "timestamp" }
  | { readonly kind: "timestamptz" }
  | { readonly kind: "uuid" }
  | { readonly kind: "json" }
  | { readonly kind: "bytes" }
  | { readonly kind: "interval" }
  | { readonly kind: "list"; readonly element: LogicalType }

/** One cell: the representation of its column's logical type (table above), or `null` for SQL NULL. */
export type Value =
  | null
  | number
  | bigint
  | string
  | boolean
  | Uint8Array
  | ReadonlyArray<Value>

/** Parses a `columns:` override type: `decimal(38,9)`, `int64`, `string`, `timestamptz`, `list<int32>`, … */
export const parseLogicalType = (text: string): LogicalType | undefined => {
  const spelled = text.trim().toLowerCase()
  const decimal = /^(?:decimal|numeric)\((\d+)\s*,\s*(\d+)\)$/.exec(spelled)
  if (decimal) {
    const precision = Number(decimal[1])
    const scale = Number(decimal[2])
    return precision >= 1 && precision <= 76 && scale <= precision ? { kind: "decimal", precision, scale } : undefined
  }
  const list = /^list<(.+)>$/.exec(spelled)
  if (list) {
    const element = parseLogicalType(list[1]!)
    return element ? { kind: "list", element } : undefined
  }
  const aliases: Record<string, LogicalType["kind"]> = {
    int16: "int16", smallint: "int16", int2: "int16",
    int32: "int32", int: "int32", integer: "int32", int4: "int32",
    int64: "int64", bigint: "int64", int8: "int64",
    float32: "float32", real: "float32", float4: "float32",
    float64: "float64", double: "float64", float8: "float64",
    string: "string", text: "string", varchar: "string",
    bool: "bool", boolean: "bool",
    date: "date", time: "time",
    timestamp: "timestamp", timestamptz: "timestamptz", timestamp_tz: "timestamptz",
    uuid: "uuid", json: "json", jsonb: "json",
    bytes: "bytes", bytea: "bytes", binary: "bytes",
    interval: "interval"
  }
  const kind = aliases[spelled]
  return kind === undefined || kind === "decimal" || kind === "list" ? undefined : ({ kind } as LogicalType)
}
