import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { ExportConfig } from "../../config/model.js"
import { ConfigError, StateError } from "../../core/errors.js"
import type { SourceDriverShape } from "../../core/plugin.js"
import type { RunRecord } from "../../state/store.js"
import { decodeStored } from "./stored.js"

/**
 * What a checkpointed run read and how it wrote it, recorded with the run: a worker joining it or a `--resume` of it
 * must have the same, or the run's manifest would list parts of two sources or of two encodings. Config paths
 * (`source.database`, `format.compression`, `max_file_size`) map to their values as JSON text, so a refusal can name
 * each difference. Everything of the decoded config is in it except the keys listed below, which cannot change the
 * rows or the bytes written; a new option is therefore compared unless it is added to those lists.
 */
export type RunIdentity = Readonly<Record<string, string>>

/**
 * Source keys left out: the connection (`url`, `url_env`, `url_file`, `embedded`, or host, port, user, database and
 * password) is replaced by the driver's host, port, database and user — never the password — and timeouts or the
 * session's name change no value read.
 */
export const IGNORED_SOURCE_KEYS: ReadonlyArray<string> = [
  "url",
  "url_env",
  "url_file",
  "host",
  "port",
  "user",
  "database",
  "password",
  "password_env",
  "password_file",
  "embedded",
  "statement_timeout_s",
  "lock_timeout_s",
  "application_name"
]

/**
 * Export keys left out (YAML names, dotted below `mode` and `partition_by`): how rows are grouped in memory, retries,
 * checks on what was written and other runs' concerns. `format` and `destination` are compared on their own.
 */
export const IGNORED_EXPORT_KEYS: ReadonlyArray<string> = [
  "name",
  "notices",
  "quality",
  "on_schema_drift",
  "skip_empty",
  "batch_size",
  "mode.parallel",
  "mode.max_attempts",
  "partition_by.path",
  "format",
  "destination",
  "transform"
]

/** The YAML name of an `ExportConfig` field where it is not the field's snake_case spelling. */
const YAML_NAMES: Readonly<Record<string, string>> = { column_types: "columns", partition: "partition_by" }

const snakeCase = (key: string): string => key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`)

const jsonText = (value: unknown): string =>
  JSON.stringify(value, (_key, inner: unknown) => (typeof inner === "bigint" ? inner.toString() : inner)) ?? "null"

/** Adds every leaf of `value` under `path`; secrets (Redacted) and functions are never recorded. */
const addLeaves = (
  into: Record<string, string>,
  path: string,
  value: unknown,
  ignored: ReadonlySet<string>,
  rename: (key: string) => string
): void => {
  if (value === undefined || typeof value === "function" || Redacted.isRedacted(value)) return
  // A map's entries are its leaves (a column's type override is one value, shown whole).
  if (value instanceof Map) {
    for (const [key, inner] of value) into[`${path}.${String(key)}`] = jsonText(inner)
    return
  }
  const plain: unknown = value
  if (plain !== null && typeof plain === "object" && !Array.isArray(plain)) {
    for (const [key, inner] of Object.entries(plain)) {
      const name = rename(key)
      const at = path === "" ? name : `${path}.${name}`
      if (!ignored.has(at)) addLeaves(into, at, inner, ignored, rename)
    }
    return
  }
  into[path] = jsonText(plain)
}

export interface RunIdentityInput {
  readonly spec: ExportConfig
  /** The source plugin's `type` and its decoded `source:` block. */
  readonly sourceType: string
  readonly sourceConfig?: unknown
  readonly source: Pick<SourceDriverShape, "displayUrl" | "identity">
  readonly destinationUri: string
}

/** The identity of a run of `spec` with this source and destination. */
export const runIdentityOf = (input: RunIdentityInput): RunIdentity => {
  const entries: Record<string, string> = { "source.type": jsonText(input.sourceType) }
  const { identity } = input.source
  if (identity === undefined) entries["source.address"] = jsonText(input.source.displayUrl)
  else for (const [key, value] of Object.entries(identity)) entries[`source.${key}`] = jsonText(value)
  const sourceBlock: Record<string, string> = {}
  addLeaves(sourceBlock, "", input.sourceConfig, new Set(IGNORED_SOURCE_KEYS), (key) => key)
  for (const [key, value] of Object.entries(sourceBlock)) entries[`source.${key}`] = value
  entries["format.type"] = jsonText(input.spec.format.plugin.type)
  addLeaves(entries, "format", input.spec.format.config, new Set(), (key) => key)
  entries["destination.type"] = jsonText(input.spec.destination.plugin.type)
  entries["destination.uri"] = jsonText(input.destinationUri)
  const exportKeys: Record<string, string> = {}
  addLeaves(exportKeys, "", { ...input.spec, mode: input.spec.mode.settings }, new Set(IGNORED_EXPORT_KEYS), (key) => YAML_NAMES[snakeCase(key)] ?? snakeCase(key))
  // A transform given in code cannot be compared, only its presence.
  if (input.spec.transform !== undefined) exportKeys["transform"] = jsonText("given in code")
  return { ...entries, ...exportKeys }
}

const IDENTITY_VERSION = 1

const StoredIdentity = Schema.Struct({
  version: Schema.Literal(IDENTITY_VERSION),
  entries: Schema.Record({ key: Schema.String, value: Schema.String })
})

/** The identity as stored with the run (`rivet_runs.run_identity`). */
export const encodeRunIdentity = (identity: RunIdentity): string =>
  JSON.stringify({ version: IDENTITY_VERSION, entries: identity })

const shown = (json: string | undefined): string => {
  if (json === undefined) return "(not set)"
  const value: unknown = JSON.parse(json)
  return typeof value === "string" ? value : json
}

/** `format.compression: run has zstd, this config has none`, one per differing path (source type first). */
export const identityDifferences = (run: RunIdentity, current: RunIdentity): ReadonlyArray<string> =>
  [...new Set([...Object.keys(current), ...Object.keys(run)])]
    .filter((path) => run[path] !== current[path])
    .map((path) => `${path}: run has ${shown(run[path])}, this config has ${shown(current[path])}`)

/**
 * Refuses to continue `run` (`join` a distributed run, or `resume` one) unless it was recorded with the same identity.
 * A run recorded by a Rivet that kept no identity cannot be checked, so it is refused too.
 */
export const checkRunIdentity = (
  spec: ExportConfig,
  run: RunRecord,
  current: RunIdentity,
  action: "join" | "resume",
  startOver: string
): Effect.Effect<void, ConfigError | StateError> =>
  Effect.gen(function* () {
    const verb = action === "join" ? "this worker cannot join" : "cannot resume"
    if (run.identity === undefined) {
      return yield* new StateError({
        message: `${verb} run '${run.runId}': it was recorded by an earlier Rivet that did not record its source and format options, so they cannot be checked against this config`,
        hint: `finish it with the Rivet version that started it, ${startOver}`
      })
    }
    const stored = yield* decodeStored(StoredIdentity, spec.name, `identity of run '${run.runId}'`)(run.identity)
    const differences = identityDifferences(stored.entries, current)
    if (differences.length === 0) return
    return yield* new ConfigError({
      path: `export '${spec.name}'`,
      message: `${verb} run '${run.runId}': it ${action === "join" ? "is being run" : "ran"} with another source or output settings (${differences.join("; ")})`,
      hint: `use the config and source the run started with (only the password, timeouts, batch_size, parallel, quality and logging may differ), ${startOver}`
    })
  })
