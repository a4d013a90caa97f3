import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ConfigError } from "../../../core/errors.js"
import { identifierLengthProblem } from "../../../core/source/identifiers.js"
import { NonEmptyColumnName } from "../../../config/model.js"
import { defineMode } from "../define.js"
import { prepareKeyset } from "../keyset.js"
import { checkpointFields, checkpointSettings, noCheckpointNote } from "./checkpoint-keys.js"

const DEFAULT_PAGE_SIZE = 100_000

const keys = Schema.Struct({
  key_columns: Schema.optional(
    Schema.Union(NonEmptyColumnName, Schema.NonEmptyArray(NonEmptyColumnName))
      .annotations({
        message: () => ({ message: "must be a column name or a non-empty list of column names, e.g. [tenant_id, id]", override: true })
      })
      // After the union, whose message replaces every inner one: the length problem keeps its own words.
      .pipe(
        Schema.filter((key) =>
          (typeof key === "string" ? [key] : key).map((name) => identifierLengthProblem("column name", name)).find((problem) => problem !== undefined) ?? true
        )
      )
      .annotations({
        description: "keyset: the unique, non-null key to page by, one column or a list (default: the primary key)."
      })
  ),
  page_size: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, { message: () => "must be a whole number of at least 1" })).annotations({
      description: "keyset: rows per page; each page is one short statement and its own part (default 100000)."
    })
  ),
  ...checkpointFields
})

export const keysetMode = defineMode({
  kind: "keyset",
  summary: "keyset (pages ordered by a key)",
  keys,
  required: { keys: ["key_columns"], withQuery: true },
  writesSeveralParts: true,
  read: (decoded, { path, hasTable }) => {
    if (decoded.key_columns === undefined && !hasTable) {
      return Either.left([
        new ConfigError({
          path: `${path}.key_columns`,
          message: "is required with mode: keyset when the export has a query instead of a table",
          hint: "name a unique, non-null key, e.g. key_columns: [tenant_id, id]"
        })
      ])
    }
    const columns = decoded.key_columns
    const keyColumns = columns === undefined ? undefined : typeof columns === "string" ? [columns] : columns
    if (keyColumns && new Set(keyColumns).size !== keyColumns.length) {
      return Either.left([new ConfigError({ path: `${path}.key_columns`, message: "lists a column twice", hint: undefined })])
    }
    return Either.right({
      kind: "keyset" as const,
      keyColumns,
      pageSize: decoded.page_size ?? DEFAULT_PAGE_SIZE,
      ...checkpointSettings(decoded)
    })
  },
  behaviour: (settings) => ({
    prepare: (ctx) => prepareKeyset(ctx, settings),
    maxAttempts: settings.maxAttempts,
    rowKeyColumns: [...(settings.keyColumns ?? [])],
    resumableWith: "chunk_checkpoint: true",
    lint: ({ at }) => noCheckpointNote("keyset", "page", settings.checkpoint)(at)
  })
})
