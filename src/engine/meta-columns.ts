import type { Batch, BatchSchema, Column } from "../core/batch.js"
import type { ColumnData } from "../core/columns/data.js"
import { rowHashColumn } from "../core/columns/row-hash.js"
import type { MetaColumnKind } from "../config/meta-columns.js"
import type { ExportConfig } from "../config/model.js"
import { ConfigError } from "../core/errors.js"

/**
 * Columns Rivet appends after an export's own (`meta_columns:`), named as the Rust rivet names them so that queries
 * over migrated exports keep working (docs/meta-columns.md).
 */
export const META_COLUMNS: Readonly<Record<MetaColumnKind, Column>> = {
  exported_at: { name: "_rivet_exported_at", type: { kind: "timestamptz" } },
  row_hash: { name: "_rivet_row_hash", type: { kind: "int64" } }
}

const kindsOf = (spec: Pick<ExportConfig, "metaColumns">): ReadonlyArray<MetaColumnKind> => spec.metaColumns ?? []

/**
 * The schema the export writes: `schema` with the meta columns appended. A column of `schema` that already has a
 * meta column's name is an error — two columns of one name would be ambiguous in every format.
 */
export const withMetaColumns = (spec: Pick<ExportConfig, "name" | "metaColumns">, schema: BatchSchema): BatchSchema | ConfigError => {
  const kinds = kindsOf(spec)
  if (kinds.length === 0) return schema
  const names = new Set(schema.columns.map((column) => column.name))
  const clash = kinds.find((kind) => names.has(META_COLUMNS[kind].name))
  if (clash !== undefined) {
    const name = META_COLUMNS[clash].name
    return new ConfigError({
      path: `export '${spec.name}'.meta_columns`,
      message: `the export's result already has a column '${name}', the name of the ${clash} meta column`,
      hint: `rename that column in the query (SELECT …, ${name} AS source${name}), or remove ${clash} from meta_columns`
    })
  }
  return { columns: [...schema.columns, ...kinds.map((kind) => META_COLUMNS[kind])] }
}

/**
 * Appends the meta columns to each batch, as column buffers: `_rivet_exported_at` holds the run's start (the same
 * value in every row of the run, resumed attempts included), `_rivet_row_hash` the hash of the row's own columns.
 * `output` is the schema `withMetaColumns` returned for the batches' schema.
 */
export const metaColumnsAppender = (
  spec: Pick<ExportConfig, "metaColumns">,
  runStartedAt: Date,
  output: BatchSchema
): ((batch: Batch) => Batch) => {
  const kinds = kindsOf(spec)
  const exportedAt = BigInt(runStartedAt.getTime()) * 1000n
  return (batch) => {
    const extra = kinds.map((kind): ColumnData => {
      if (kind === "row_hash") return rowHashColumn(batch.schema, batch.columns, batch.rowCount)
      return {
        layout: "int64",
        length: batch.rowCount,
        nullCount: 0,
        validity: undefined,
        values: new BigInt64Array(batch.rowCount).fill(exportedAt)
      }
    })
    return { schema: output, columns: [...batch.columns, ...extra], rowCount: batch.rowCount }
  }
}
