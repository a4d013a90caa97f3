import type { PartitionSpec } from "../../../config/partition.js"
import type { IcebergField } from "./schema.js"

/** Iceberg numbers partition fields from 1000. */
export const FIRST_PARTITION_FIELD_ID = 1000

/** One field of a partition spec as table metadata spells it. */
export interface PartitionField {
  readonly "source-id": number
  readonly "field-id": number
  readonly name: string
  readonly transform: string
}

export interface IcebergPartitionSpec {
  readonly "spec-id": number
  readonly fields: ReadonlyArray<PartitionField>
}

/** A partition value: an int for a transform (years, months, days or hours since 1970), the source's own for identity. */
export type PartitionValue = number | string | boolean | null

/** The types identity partitions support: their directory text converts back exactly. */
const IDENTITY_TYPES = new Set(["int", "long", "string", "boolean", "date"])

/** Why `partition_by` cannot be an Iceberg partition spec over these fields, or undefined. */
export const partitionProblem = (partition: PartitionSpec, fields: ReadonlyArray<IcebergField>): string | undefined => {
  for (const by of partition.columns) {
    const field = fields.find((each) => each.name === by.column)
    if (field === undefined) return `partition_by column '${by.column}' is not a column of the result`
    if (by.granularity === undefined && !(typeof field.type === "string" && IDENTITY_TYPES.has(field.type)))
      return `partition_by column '${by.column}' is ${JSON.stringify(field.type)}: an Iceberg identity partition by Rivet takes int, long, string, boolean or date columns`
  }
  return undefined
}

/** The Iceberg partition spec of `partition_by`: identity for a plain column, the year/month/day/hour transforms. */
export const partitionSpecOf = (partition: PartitionSpec | undefined, fields: ReadonlyArray<IcebergField>, specId: number): IcebergPartitionSpec => ({
  "spec-id": specId,
  fields: (partition?.columns ?? []).map((by, index) => ({
    "source-id": fields.find((field) => field.name === by.column)!.id,
    "field-id": FIRST_PARTITION_FIELD_ID + index,
    name: by.key,
    transform: by.granularity ?? "identity"
  }))
})

export const sameSpec = (a: IcebergPartitionSpec, b: IcebergPartitionSpec): boolean =>
  a.fields.length === b.fields.length &&
  a.fields.every((field, i) => {
    const other = b.fields[i]!
    return field["source-id"] === other["source-id"] && field.transform === other.transform && field.name === other.name
  })

const daysOf = (date: string): number => Math.floor(Date.parse(`${date}T00:00:00Z`) / 86_400_000)

/** A transform's value from Rivet's directory text (`2024`, `2024-05`, `2024-05-17`, `2024-05-17T13`, UTC). */
const transformed = (transform: string, text: string): number => {
  const year = Number(text.slice(0, 4))
  switch (transform) {
    case "year":
      return year - 1970
    case "month":
      return (year - 1970) * 12 + Number(text.slice(5, 7)) - 1
    case "day":
      return daysOf(text.slice(0, 10))
    default:
      return daysOf(text.slice(0, 10)) * 24 + Number(text.slice(11, 13))
  }
}

const identity = (type: IcebergField["type"], text: string): PartitionValue => {
  switch (type) {
    case "int":
    case "long":
      return Number(text)
    case "boolean":
      return text === "true"
    case "date":
      return daysOf(text)
    default:
      return text
  }
}

/**
 * A data file's partition tuple, from the values its part record names by directory key. Rivet writes NULL and the
 * empty string to one default directory, recorded as null.
 */
export const partitionTuple = (
  spec: IcebergPartitionSpec,
  fields: ReadonlyArray<IcebergField>,
  values: Readonly<Record<string, string | null>> | undefined
): Record<string, PartitionValue> =>
  Object.fromEntries(
    spec.fields.map((field) => {
      const text = values?.[field.name] ?? null
      const source = fields.find((each) => each.id === field["source-id"])!
      return [field.name, text === null ? null : field.transform === "identity" ? identity(source.type, text) : transformed(field.transform, text)]
    })
  )

/** The Avro type of a partition value: an int for a transform, the source's for identity; always nullable. */
export const partitionAvroType = (field: PartitionField, fields: ReadonlyArray<IcebergField>): string | { readonly type: string; readonly logicalType: string } => {
  if (field.transform !== "identity") return "int"
  const source = fields.find((each) => each.id === field["source-id"])!
  switch (source.type) {
    case "long":
      return "long"
    case "boolean":
      return "boolean"
    case "string":
      return "string"
    case "date":
      return { type: "int", logicalType: "date" }
    default:
      return "int"
  }
}
