import * as Config from "effect/Config"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type { ExportConfig } from "../../config/model.js"
import type { TableFormatSpec } from "../../config/table-format.js"
import type { BatchSchema } from "../../core/batch.js"
import { FormatError, TableCommitError } from "../../core/errors.js"
import type { FormatDriverShape, SinkDriverShape } from "../../core/plugin.js"
import type { RetryPolicy } from "../../core/retry.js"
import type { ModeOutcome, RunJournal } from "../modes/mode.js"
import type { Catalog, TableHead } from "./catalog/catalog.js"
import { fileSystemCatalog } from "./catalog/filesystem.js"
import { sqlCatalog } from "./catalog/sql.js"
import { connectCatalog } from "./catalog/sql-connection.js"
import { commitSnapshot, type CommittedSnapshot } from "./iceberg/commit.js"
import { snapshotDataFiles } from "./iceberg/current-files.js"
import { currentSchema, currentSnapshot } from "./iceberg/metadata.js"
import { evolveSchema, refusedColumns, withFieldIds } from "./iceberg/schema.js"
import type { SnapshotOperation } from "./iceberg/snapshot.js"
import { tableFilesOf, type TableFiles } from "./table-files.js"

/** An export's table, opened for one run: its parts carry the table's field ids, and the run commits one snapshot. */
export interface OpenedTable {
  /** `namespace.name`. */
  readonly name: string
  readonly catalog: Catalog
  readonly operation: SnapshotOperation
  /** The table as the run found it (undefined before its first commit). */
  readonly head: TableHead | undefined
  /** The export's format driver, writing data files with the table's field ids (json and interval as text). */
  readonly format: (driver: FormatDriverShape) => FormatDriverShape
  /** Commits the run's parts as one snapshot; nothing for a run without rows. */
  readonly commit: (outcome: ModeOutcome, journal: RunJournal) => Effect.Effect<CommittedSnapshot | undefined, TableCommitError>
}

/** `append` for the modes that add rows, `overwrite` for `full`, whose run is the whole table. */
export const operationOf = (spec: ExportConfig): SnapshotOperation => (spec.mode.kind === "full" ? "overwrite" : "append")

export const tableNameOf = (table: TableFormatSpec): string => `${table.namespace}.${table.name}`

/** The table's catalog; a SQL catalog's connection (its URL from the variable `url_env` names) closes with the scope. */
const catalogOf = (table: TableFormatSpec, files: TableFiles): Effect.Effect<Catalog, TableCommitError, Scope.Scope> => {
  const catalog = table.catalog
  if (catalog.type === "filesystem") return Effect.succeed(fileSystemCatalog(files))
  return Config.redacted(catalog.urlEnv).pipe(
    Effect.mapError(
      (cause) =>
        new TableCommitError({
          table: files.table,
          message: `the SQL catalog's URL variable ${catalog.urlEnv} is not set`,
          hint: `set ${catalog.urlEnv}=postgres://… or sqlite:/path/catalog.db (${table.path}.catalog.url_env)`,
          retryable: false,
          cause
        })
    ),
    Effect.flatMap((url) => connectCatalog(Redacted.value(url), files.table)),
    Effect.map((connection) => sqlCatalog(files, connection, { catalog: catalog.name, namespace: table.namespace, name: table.name }))
  )
}

/** The export's table and its catalog, without loading anything (`rivet doctor`, `rivet plan`). */
export const tableOf = (table: TableFormatSpec, sink: SinkDriverShape, retry: RetryPolicy) => {
  const files = tableFilesOf(sink, tableNameOf(table), retry)
  return Effect.map(catalogOf(table, files), (catalog) => ({ files, catalog }))
}

/** What `rivet plan` shows of the export's table: reads its current metadata, writes nothing. */
export const describeTable = (spec: ExportConfig, sink: SinkDriverShape, retry: RetryPolicy) =>
  Effect.gen(function* () {
    const table = spec.tableFormat
    if (table === undefined) return undefined
    const { catalog } = yield* tableOf(table, sink, retry)
    const head = yield* catalog.load
    const current = head === undefined ? undefined : currentSnapshot(head.metadata)
    return {
      format: table.type,
      name: tableNameOf(table),
      catalog: catalog.label,
      operation: operationOf(spec),
      current_snapshot: current === undefined ? null : current["snapshot-id"]
    }
  }).pipe(Effect.scoped)

/** The export's table as `rivet validate` checks it: its current snapshot's data files, or undefined before a commit. */
export const currentTableFiles = (table: TableFormatSpec, sink: SinkDriverShape, retry: RetryPolicy) =>
  Effect.gen(function* () {
    const { files, catalog } = yield* tableOf(table, sink, retry)
    const head = yield* catalog.load
    const snapshot = head === undefined ? undefined : currentSnapshot(head.metadata)
    if (snapshot === undefined) return { files, snapshot: undefined, dataFiles: [] }
    return { files, snapshot, dataFiles: yield* snapshotDataFiles(files, snapshot) }
  }).pipe(Effect.scoped)

/** Opens the export's table for a run, or undefined when the export has no `table_format`. */
export const openTable = Effect.fn("TableFormat.open")(function* (spec: ExportConfig, sink: SinkDriverShape, retry: RetryPolicy) {
  const table = spec.tableFormat
  if (table === undefined) return undefined
  const { files, catalog } = yield* tableOf(table, sink, retry)
  const head = yield* catalog.load
  const current = head === undefined ? undefined : currentSchema(head.metadata)
  const lastColumnId = head?.metadata["last-column-id"] ?? 0
  const written = (schema: BatchSchema) => evolveSchema(current, schema, lastColumnId)
  const refusal = (schema: BatchSchema) => {
    const refused = refusedColumns(schema)
    const retyped = written(schema).retyped
    if (refused.length > 0)
      return new FormatError({
        format: "iceberg",
        message: `table ${files.table}: ${refused.map((each) => `column "${each.column}": ${each.reason}`).join("; ")}`,
        hint: "override the column's type in the export's columns: block (e.g. { type: string }) or cast it in the query (docs/formats/iceberg.md, Types)"
      })
    if (retyped.length > 0)
      return new FormatError({
        format: "iceberg",
        message: `table ${files.table}: column(s) ${retyped.join(", ")} have another type than in the table, and Rivet does not change a column's Iceberg type`,
        hint: "cast the column back to its type in the query, or write the export to a new table location"
      })
    return undefined
  }
  const operation = operationOf(spec)
  return {
    name: files.table,
    catalog,
    operation,
    head,
    format: (driver) => ({
      ...driver,
      validate: (schema) => {
        const refused = refusal(schema)
        return refused === undefined ? driver.validate(withFieldIds(schema, written(schema).fields)) : Effect.fail(refused)
      },
      open: (schema, part) => driver.open(withFieldIds(schema, written(schema).fields), part)
    }),
    commit: (outcome, journal) =>
      outcome.parts.every((part) => part.rows === 0)
        ? Effect.succeed(undefined)
        : commitSnapshot(files, catalog, {
            parts: outcome.parts.filter((part) => part.rows > 0),
            schema: outcome.schema,
            operation,
            runId: journal.runId,
            partition: spec.partition,
            properties: table.properties,
            written: written(outcome.schema)
          })
  } satisfies OpenedTable
})
