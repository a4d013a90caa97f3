import * as Schema from "effect/Schema"
import { ConfigError } from "../core/errors.js"

const EnvName = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: () => "must be the name of an environment variable, e.g. ICEBERG_CATALOG_URL" })
)

const NamePart = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_][A-Za-z0-9_-]*$/, { message: () => "use letters, digits, '_' and '-' (it names the table in the catalog)" })
)

const FileSystemCatalog = Schema.Struct({
  type: Schema.Literal("filesystem").annotations({ description: "The table's metadata files alone: v{N}.metadata.json and version-hint.text beside the data." })
})

const SqlCatalog = Schema.Struct({
  type: Schema.Literal("sql").annotations({ description: "Iceberg's JDBC catalog table iceberg_tables, in PostgreSQL or SQLite." }),
  url_env: EnvName.annotations({
    description: "The variable holding the catalog database's URL: postgres://… or sqlite:/path/to/catalog.db."
  }),
  name: Schema.optional(
    NamePart.annotations({ description: "The catalog_name column: the name Spark, Trino or pyiceberg give this catalog (default: rivet)." })
  )
})

export const IcebergBlock = Schema.Struct({
  type: Schema.Literal("iceberg").annotations({ description: "The table format: iceberg (format version 2)." }),
  catalog: Schema.optional(
    Schema.Union(FileSystemCatalog, SqlCatalog).annotations({ description: "Where the table's current metadata is registered (default: { type: filesystem })." })
  ),
  namespace: Schema.optional(NamePart.annotations({ description: "The table's namespace in the catalog (default: the source table's schema, or 'default')." })),
  name: Schema.optional(NamePart.annotations({ description: "The table's name in the catalog (default: the export's name)." })),
  properties: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.String }).annotations({
      description: "Table properties written into the metadata, e.g. { write.parquet.compression-codec: zstd }."
    })
  )
})

export const TableFormatConfig = Schema.Union(
  Schema.Literal("iceberg").annotations({ description: "Short form: an Iceberg table with a file-system catalog at the destination." }),
  IcebergBlock
).annotations({
  description:
    "Commit every run's parts as one snapshot of an Apache Iceberg table whose location is the destination (format: parquet only; docs/formats/iceberg.md)."
})
export type TableFormatConfig = typeof TableFormatConfig.Type

/** Where an Iceberg table's current metadata is registered. */
export type CatalogSpec =
  | { readonly type: "filesystem" }
  | { readonly type: "sql"; readonly urlEnv: string; readonly name: string }

/** `table_format:` decoded: the table an export's runs commit to (docs/formats/iceberg.md). */
export interface TableFormatSpec {
  readonly type: "iceberg"
  readonly catalog: CatalogSpec
  readonly namespace: string
  readonly name: string
  readonly properties: Readonly<Record<string, string>>
  /** `exports[i].table_format`, for errors found at run time. */
  readonly path: string
}

export const DEFAULT_SQL_CATALOG_NAME = "rivet"
const DEFAULT_NAMESPACE = "default"

/** What the rest of the export says that a table format depends on. */
interface ExportFacts {
  readonly name: string
  readonly sourceSchema: string | undefined
  readonly format: string
  readonly destinationType: string | undefined
  readonly modeKind: string
  readonly partitionKeepColumns: boolean | undefined
}

/** The export's table format, or the problems of combining it with the rest of the export. */
export const tableFormatOf = (
  config: TableFormatConfig | undefined,
  path: string,
  facts: ExportFacts
): { readonly spec?: TableFormatSpec | undefined; readonly problems: ReadonlyArray<ConfigError> } => {
  if (config === undefined) return { problems: [] }
  const at = `${path}.table_format`
  const problems: Array<ConfigError> = []
  if (facts.format !== "parquet")
    problems.push(
      new ConfigError({
        path: `${path}.format`,
        message: `table_format: iceberg writes Parquet data files, not ${facts.format}`,
        hint: "set format: parquet (or remove table_format)"
      })
    )
  if (facts.destinationType === "stdout")
    problems.push(new ConfigError({ path: at, message: "an Iceberg table needs a location: the stdout destination has none", hint: "write to a local or s3 destination" }))
  if (facts.modeKind === "cdc")
    problems.push(
      new ConfigError({
        path: at,
        message: "mode: cdc does not commit to an Iceberg table yet (its deletes need equality delete files)",
        hint: "use another mode, or remove table_format"
      })
    )
  if (facts.partitionKeepColumns === false)
    problems.push(
      new ConfigError({
        path: `${path}.partition_keep_columns`,
        message: "an Iceberg table keeps its partition columns inside the data files",
        hint: "remove partition_keep_columns"
      })
    )
  if (problems.length > 0) return { problems }
  const block = config === "iceberg" ? { type: "iceberg" as const } : config
  const catalog: CatalogSpec =
    block.catalog === undefined || block.catalog.type === "filesystem"
      ? { type: "filesystem" }
      : { type: "sql", urlEnv: block.catalog.url_env, name: block.catalog.name ?? DEFAULT_SQL_CATALOG_NAME }
  return {
    spec: {
      type: "iceberg",
      catalog,
      namespace: block.namespace ?? facts.sourceSchema ?? DEFAULT_NAMESPACE,
      name: block.name ?? facts.name,
      properties: block.properties ?? {},
      path: at
    },
    problems
  }
}
