import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ConfigError } from "../core/errors.js"
import type { LintFinding } from "./finding.js"
import { knownKeys } from "./issues.js"

/** What a mode's lints see of their export: lints read the config only, nothing connects. */
export interface ModeLintContext {
  /** The config path of the export (`exports[2]`) or of one of its keys (`exports[2].parallel`). */
  readonly at: (key?: string) => string
  /** `schema.table` or `table`, when the export names a table rather than a query. */
  readonly table?: string | undefined
  readonly maxFileSize?: number | undefined
}

/** Where a mode's keys are read: the export's config path, and whether it names a table (a query must name keys) or a query. */
export interface ModeReadContext {
  readonly path: string
  readonly hasTable: boolean
  /** False also when the export names neither (that error is the export's, not the mode's). */
  readonly hasQuery: boolean
}

/**
 * An export's mode: the settings its definition decoded, with what the rest of Rivet asks of a mode answered for
 * those settings. The engine's modes carry their run behaviour besides (engine/modes/define.ts).
 */
export interface ExportMode {
  readonly kind: string
  /** The decoded keys, camelCase, defaults applied: `{ kind: "chunked", chunkSize: 100000, parallel: 1, … }`. */
  readonly settings: { readonly kind: string }
  /** A run writes one part per unit (chunk, page) rather than one file that only max_file_size splits. */
  readonly writesSeveralParts: boolean
  /** Units read at once, each on its own source connection. */
  readonly parallel: number
  /** Attempts per unit (chunk, page) the config sets; undefined: the first and every retry of the retry policy. */
  readonly maxAttempts?: number | undefined
  /** The columns that name a row in a notice (chunk column, key, cursor), used when the output has them all. */
  readonly rowKeyColumns: ReadonlyArray<string>
  /** The setting with which `--resume` would continue a run of this mode (`chunk_checkpoint: true`), if any. */
  readonly resumableWith?: string | undefined
  /** `rivet run --worker`: several processes may share one run. */
  readonly distributable: boolean
  /** The run stores a cursor after it publishes, and must find the stored one unmoved before (incremental). */
  readonly tracksCursor: boolean
  /** Can keep reading, publishing one window a run after another (`rivet run --follow`): cdc. */
  readonly followable: boolean
  /** Its settings ask to keep reading without `--follow` (cdc `until_current: false`). */
  readonly continuous: boolean
  /**
   * What the export reads on the server that other exports of the config may read with it (cdc: its replication
   * slot); undefined: nothing shared.
   */
  readonly sharedRead: (exportName: string, table: SharedReadTable | undefined) => SharedRead | undefined
  readonly lint: (context: ModeLintContext) => ReadonlyArray<LintFinding>
}

/**
 * A resource on the server several exports read at once (cdc: a replication slot, read once for all of them).
 * Exports naming the same `resource` run side by side and are selected together; they must agree on each setting
 * of `agree` and differ on each of `distinct` (config path → value).
 */
export interface SharedRead {
  /** Names it in messages: `replication slot rivet_orders`. */
  readonly resource: string
  readonly agree: Readonly<Record<string, unknown>>
  readonly distinct: Readonly<Record<string, unknown>>
}

/** The export's `table:`, as decoded, for `sharedRead`. */
export interface SharedReadTable {
  readonly schema?: string | undefined
  readonly name: string
}

/**
 * A mode as the config sees it: its `mode:` name, its own keys and how they decode into an {@link ExportMode}. The
 * engine's `defineMode` makes one; the config decodes with the list it is given (engine/modes/kinds/list.ts).
 */
export interface ModeDefinition<K extends string = string, S extends Schema.Schema.AnyNoContext = Schema.Schema.AnyNoContext> {
  readonly kind: K
  /** What the mode does, in a clause: `chunked (key ranges, optionally in parallel)`. */
  readonly summary: string
  /** Its YAML keys, a `Schema.Struct`. A key two modes share has the same schema in both. */
  readonly keys: S
  /** Keys the JSON Schema requires with this mode (`withQuery`: only when the export has a query, not a table). */
  readonly required?: { readonly keys: ReadonlyArray<string>; readonly withQuery?: boolean | undefined } | undefined
  /** See {@link ExportMode.writesSeveralParts}; known before the keys decode. */
  readonly writesSeveralParts: boolean
  /** Decodes the mode's own keys (those of `fields` the export has), reporting problems with their config paths. */
  readonly decode: (keys: Readonly<Record<string, unknown>>, at: ModeReadContext) => Either.Either<ExportMode, ReadonlyArray<ConfigError>>
}

/** The modes a config may name; the first is the default (no `mode:` key). */
export type ModeList = readonly [ModeDefinition, ...ReadonlyArray<ModeDefinition>]

/** Which modes each mode-specific key belongs to, in list order. */
export const keyModes = (modes: ModeList): ReadonlyMap<string, ReadonlyArray<string>> => {
  const owners = new Map<string, Array<string>>()
  for (const mode of modes) for (const key of knownKeys(mode.keys)) owners.set(key, [...(owners.get(key) ?? []), mode.kind])
  return owners
}

/** The schema of `mode:`: one of the list's names. */
export const modeKey = (modes: ModeList) =>
  Schema.Literal(...(modes.map((mode) => mode.kind) as [string, ...Array<string>])).annotations({
    description: `How rows are selected: ${modes.map((mode, index) => `${mode.summary}${index === 0 ? " (the default)" : ""}`).join(", ")}.`
  })

/**
 * Builds an export's mode from its mode-specific keys. A key of another mode is an error rather than silently
 * ignored (it usually means the `mode:` line is missing); so is a missing required key.
 */
export const decodeMode = (
  modes: ModeList,
  kind: string | undefined,
  keys: Readonly<Record<string, unknown>>,
  at: ModeReadContext
): { readonly mode?: ExportMode; readonly problems: ReadonlyArray<ConfigError> } => {
  const definition = kind === undefined ? modes[0] : modes.find((mode) => mode.kind === kind)
  // An unknown `mode:` already failed the export's own keys (`modeKey`).
  if (definition === undefined) return { problems: [] }
  const owners = keyModes(modes)
  const problems: Array<ConfigError> = []
  const ownKeys = knownKeys(definition.keys)
  const own: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(keys)) {
    if (value === undefined) continue
    if (ownKeys.includes(key)) {
      own[key] = value
      continue
    }
    const kinds = owners.get(key) ?? []
    problems.push(
      new ConfigError({
        path: `${at.path}.${key}`,
        message: `applies to mode: ${kinds.join(" or ")} only, but this export's mode is ${definition.kind}`,
        hint: `set mode: ${kinds[0]} or remove ${key}`
      })
    )
  }
  const decoded = definition.decode(own, at)
  if (Either.isLeft(decoded)) return { problems: [...problems, ...decoded.left] }
  return problems.length > 0 ? { problems } : { mode: decoded.right, problems }
}

/** A key the mode cannot do without. */
export const requiredKey = (path: string, key: string, kind: string, example: string): ConfigError =>
  new ConfigError({ path: `${path}.${key}`, message: `is required with mode: ${kind}`, hint: `e.g. ${key}: ${example}` })
