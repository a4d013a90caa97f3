import { randomUUID } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import { describeCause, TableCommitError } from "../../../core/errors.js"
import { parseTableMetadata } from "../iceberg/metadata.js"
import type { TableFiles } from "../table-files.js"
import type { Catalog, TableHead } from "./catalog.js"
import type { SqlConnection } from "./sql-connection.js"

/** Iceberg's JDBC catalog table, as Spark's JdbcCatalog and pyiceberg's SqlCatalog create and read it. */
const CREATE_TABLES = `CREATE TABLE IF NOT EXISTS iceberg_tables (
  catalog_name VARCHAR(255) NOT NULL,
  table_namespace VARCHAR(255) NOT NULL,
  table_name VARCHAR(255) NOT NULL,
  metadata_location VARCHAR(1000),
  previous_metadata_location VARCHAR(1000),
  PRIMARY KEY (catalog_name, table_namespace, table_name)
)`
const WHERE = "catalog_name = ? AND table_namespace = ? AND table_name = ?"

/** Where the table is in the catalog. */
export interface SqlTableName {
  readonly catalog: string
  readonly namespace: string
  readonly name: string
}

const VERSION_OF_KEY = /^metadata\/(\d+)-[0-9a-f-]+\.metadata\.json$/

/**
 * The SQL catalog: the table's row in `iceberg_tables` points to its current metadata file. A commit writes the next
 * metadata under a name of its own (`metadata/{NNNNN}-{uuid}.metadata.json`, as Iceberg's catalogs name them), then
 * moves the pointer with a compare-and-set on `metadata_location` — an INSERT for the first commit — so of two
 * writers of one head exactly one moves it.
 */
export const sqlCatalog = (files: TableFiles, connection: SqlConnection, where: SqlTableName): Catalog => {
  const key = [where.catalog, where.namespace, where.name] as const
  const run = (what: string, text: string, params: ReadonlyArray<string | null>) =>
    Effect.tryPromise({
      try: () => connection.query(text, params),
      catch: (cause) =>
        new TableCommitError({
          table: files.table,
          message: `could not ${what} in the SQL catalog (${connection.dialect}): ${describeCause(cause)}`,
          hint: "check that the catalog database is up and the URL's user may create and update iceberg_tables",
          retryable: true,
          cause
        })
    })
  // Two first writers' CREATE TABLE IF NOT EXISTS can collide in PostgreSQL's catalog; the second try finds the table.
  const ensured = Effect.retry(run("create iceberg_tables", CREATE_TABLES, []), { times: 3, schedule: Schedule.spaced("50 millis") })

  const load = Effect.gen(function* () {
    yield* ensured
    const { rows } = yield* run("read the table's row", `SELECT metadata_location FROM iceberg_tables WHERE ${WHERE}`, key)
    const location = rows[0]?.["metadata_location"]
    if (typeof location !== "string") return undefined
    const metadataKey = files.keyOf(location)
    const bytes = metadataKey === undefined ? undefined : yield* files.read(metadataKey)
    const parsed = bytes === undefined ? Either.left("the file is missing, or outside the table location") : parseTableMetadata(bytes)
    if (Either.isLeft(parsed) || metadataKey === undefined)
      return yield* new TableCommitError({
        table: files.table,
        message: `the catalog points table ${files.table} to ${location}, which Rivet cannot extend: ${Either.isLeft(parsed) ? parsed.left : ""}`,
        hint: `the export's destination must be the table's location (${files.location}); or register another table name`,
        retryable: false
      })
    return { metadata: parsed.right, key: metadataKey } satisfies TableHead
  })

  return {
    label: `SQL catalog '${where.catalog}' (${connection.dialect})`,
    load,
    commit: (head, bytes) =>
      Effect.gen(function* () {
        const version = Number(VERSION_OF_KEY.exec(head?.key ?? "")?.[1] ?? (head === undefined ? 0 : 1)) + 1
        const metadataKey = `metadata/${String(version).padStart(5, "0")}-${randomUUID()}.metadata.json`
        yield* files.put(metadataKey, bytes, "application/json")
        const next = files.locationOf(metadataKey)
        const { changed } =
          head === undefined
            ? yield* run(
                "register the table",
                "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL) ON CONFLICT DO NOTHING",
                [...key, next]
              )
            : yield* run(
                "move the table's metadata pointer",
                `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE ${WHERE} AND metadata_location = ?`,
                [next, files.locationOf(head.key), ...key, files.locationOf(head.key)]
              )
        return changed === 1 ? { key: metadataKey } : (false as const)
      }),
    check: Effect.map(load, (head) =>
      head === undefined ? `iceberg_tables reachable; ${files.table} is not registered yet: the first run registers it` : `${files.table} at ${files.locationOf(head.key)}`
    )
  }
}
