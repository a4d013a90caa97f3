import * as Schema from "effect/Schema"
import { ConfigError } from "../core/errors.js"

const MetaColumn = Schema.Literal("exported_at", "row_hash")

/** A column Rivet can append after an export's own (see engine/meta-columns.ts). */
export type MetaColumnKind = typeof MetaColumn.Type

/** `meta_columns: [exported_at, row_hash]`, or the Rust rivet's `meta_columns: { exported_at: true, row_hash: true }`. */
export const MetaColumnsConfig = Schema.Union(
  Schema.Array(MetaColumn),
  Schema.Struct({
    exported_at: Schema.optional(
      Schema.Boolean.annotations({ description: "Append _rivet_exported_at: the run's start time (timestamptz)." })
    ),
    row_hash: Schema.optional(
      Schema.Boolean.annotations({ description: "Append _rivet_row_hash: a 64-bit FNV-1a hash of the row (int64)." })
    )
  })
).annotations({
  description:
    "Columns appended after the source's: exported_at (_rivet_exported_at, the run's start time, timestamptz) and row_hash (_rivet_row_hash, int64 FNV-1a of the row's canonical bytes — docs/meta-columns.md). A list, [exported_at, row_hash], or the mapping { exported_at: true, row_hash: true }."
})

export type MetaColumnsConfig = typeof MetaColumnsConfig.Type

const isList = (config: MetaColumnsConfig): config is ReadonlyArray<MetaColumnKind> => Array.isArray(config)

/** The meta columns an export asks for, in order: a list as written (each once), the mapping's `true` keys. */
export const metaColumnsOf = (
  config: MetaColumnsConfig | undefined,
  path: string
): { readonly kinds: ReadonlyArray<MetaColumnKind>; readonly problems: ReadonlyArray<ConfigError> } => {
  if (config === undefined) return { kinds: [], problems: [] }
  if (!isList(config)) return { kinds: (["exported_at", "row_hash"] as const).filter((kind) => config[kind] === true), problems: [] }
  const kinds: Array<MetaColumnKind> = []
  const problems: Array<ConfigError> = []
  for (const [index, kind] of config.entries()) {
    if (!kinds.includes(kind)) kinds.push(kind)
    else problems.push(new ConfigError({ path: `${path}.meta_columns[${index}]`, message: `lists '${kind}' twice`, hint: "name each meta column once" }))
  }
  return { kinds, problems }
}
