import type { BatchSchema, Column, FieldIds, LogicalType } from "../../../core/batch.js"
import { fileType, icebergPrimitive, type IcebergType } from "./types.js"

/** One field of an Iceberg schema as table metadata spells it. */
export interface IcebergField {
  readonly id: number
  readonly name: string
  readonly required: boolean
  readonly type: IcebergType
  readonly doc?: string | undefined
}

/** A table schema as table metadata spells it. */
export interface IcebergSchema {
  readonly type: "struct"
  readonly "schema-id": number
  readonly fields: ReadonlyArray<IcebergField>
  readonly "identifier-field-ids"?: ReadonlyArray<number> | undefined
}

/** The export's columns that have no Iceberg type, each with why. */
export const refusedColumns = (schema: BatchSchema): ReadonlyArray<{ readonly column: string; readonly reason: string }> =>
  schema.columns.flatMap((column) => {
    const mapped = icebergPrimitive(column.type)
    return "refused" in mapped ? [{ column: column.name, reason: mapped.refused }] : []
  })

/** The field ids of one column within `fields`: by name, with its list element's. */
const idsOf = (field: IcebergField): FieldIds =>
  typeof field.type === "string" ? { id: field.id } : { id: field.id, element: { id: field.type["element-id"] } }

const typeWithIds = (type: LogicalType, nextId: () => number): IcebergType => {
  if (type.kind === "list") {
    const elementId = nextId()
    return { type: "list", "element-id": elementId, element: typeWithIds(type.element, nextId), "element-required": false }
  }
  const mapped = icebergPrimitive(type)
  // Refused types are reported before anything is written (refusedColumns); this keeps the function total.
  return "type" in mapped ? mapped.type : "string"
}

const sameShape = (a: IcebergType, b: IcebergType): boolean =>
  typeof a === "string" || typeof b === "string" ? a === b : sameShape(a.element, b.element)

/** What the run's columns make of the table's current schema. */
export interface EvolvedSchema {
  /** The run's columns in order (the table's ids kept by name, new columns given new ids), then the table's others. */
  readonly fields: ReadonlyArray<IcebergField>
  /** The table's `last-column-id` after the new ids. */
  readonly lastColumnId: number
  /** Columns the run has that the table's current schema does not (new ids). */
  readonly added: ReadonlyArray<string>
  /** Columns whose type differs from the table's: an Iceberg type change Rivet does not make. */
  readonly retyped: ReadonlyArray<string>
  /** Whether the fields differ from the current schema's (a new schema id is then needed). */
  readonly changed: boolean
}

/**
 * The table schema for a run's columns: a column the current schema has keeps its field id (by name), a new one gets
 * the next id after `lastColumnId`, in column order — a pure function, so every part and the commit agree on the ids.
 * Columns the table has and the run does not stay in the schema, after the run's: readers give them NULL in this
 * run's files and still read them from older ones.
 */
export const evolveSchema = (current: IcebergSchema | undefined, schema: BatchSchema, lastColumnId: number): EvolvedSchema => {
  let last = lastColumnId
  const nextId = () => ++last
  const existing = new Map((current?.fields ?? []).map((field) => [field.name, field]))
  const added: Array<string> = []
  const retyped: Array<string> = []
  const runFields = schema.columns.map((column): IcebergField => {
    const known = existing.get(column.name)
    if (known !== undefined) {
      if (!sameShape(known.type, typeWithIds(column.type, () => 0))) retyped.push(column.name)
      return known
    }
    added.push(column.name)
    const id = nextId()
    return { id, name: column.name, required: false, type: typeWithIds(column.type, nextId) }
  })
  const currentFields = current?.fields ?? []
  const inRun = new Set(schema.columns.map((column) => column.name))
  const fields = [...runFields, ...currentFields.filter((field) => !inRun.has(field.name))]
  const changed = current === undefined || added.length > 0
  return { fields, lastColumnId: last, added, retyped, changed }
}

/** The batch schema a data file is written with: each column's Iceberg field ids, json and interval as text. */
export const withFieldIds = (schema: BatchSchema, fields: ReadonlyArray<IcebergField>): BatchSchema => {
  const byName = new Map(fields.map((field) => [field.name, field]))
  return {
    columns: schema.columns.map((column): Column => {
      const field = byName.get(column.name)
      return { ...column, type: fileType(column.type), ...(field === undefined ? {} : { fieldIds: idsOf(field) }) }
    })
  }
}
