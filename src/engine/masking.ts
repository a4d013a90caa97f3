import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import type { ExportConfig, RivetConfig } from "../config/model.js"
import type { Batch, BatchSchema } from "../core/batch.js"
import { maskColumn, maskedType, type MaskMethod, maskProblem } from "../core/columns/mask.js"
import { ConfigError, type RivetError } from "../core/errors.js"
import { maskKeyPaths, MIN_MASK_KEY_BYTES, shortMaskKey } from "../config/masking.js"

/** The key masks use in this run: its id (recorded in manifests) and its bytes (never printed). */
export interface MaskKey {
  readonly id: string
  readonly key: Redacted.Redacted<Uint8Array>
}

/** The current key of `masking:` from the environment; a missing or short one names its variable. */
export const resolveMaskKey = (
  config: Pick<RivetConfig, "masking">,
  env: Readonly<Record<string, string | undefined>>
): Effect.Effect<MaskKey | undefined, ConfigError> => {
  const masking = config.masking
  if (masking === undefined) return Effect.succeed(undefined)
  const { variable, path } = maskKeyPaths(masking).find((key) => key.id === masking.current)!
  const value = env[variable]
  if (value === undefined || value === "") {
    return Effect.fail(
      new ConfigError({ path, message: `environment variable ${variable} is not set`, hint: `set it to a secret of at least ${MIN_MASK_KEY_BYTES} bytes (e.g. openssl rand -hex 32)` })
    )
  }
  const short = shortMaskKey(variable, value)
  if (short !== undefined) return Effect.fail(new ConfigError({ path, message: short, hint: "use a longer random secret (e.g. openssl rand -hex 32)" }))
  return Effect.succeed({ id: masking.current, key: Redacted.make(new TextEncoder().encode(value)) })
}

/** Column names that usually hold personal data. */
const PERSONAL = /(^|_)(e?mail|phone|mobile|ssn|iban|birth|dob|passport|tax_?id|national_?id|card|address|surname|first_?name|last_?name|ip)(_|$)/i

/**
 * A note naming the result's columns that look personal and are written unmasked (those listed in
 * `allow_unmasked` excepted), so that a review of the plan or the run catches them; undefined when there are none.
 */
export const personalColumnsNotice = (spec: Pick<ExportConfig, "masks" | "allowUnmasked">, schema: BatchSchema): string | undefined => {
  const masked = new Set(spec.masks.map((mask) => mask.column))
  const names = schema.columns
    .map((column) => column.name)
    .filter((name) => PERSONAL.test(name) && !masked.has(name) && !spec.allowUnmasked.includes(name))
  if (names.length === 0) return undefined
  return (
    `${names.map((name) => `'${name}'`).join(", ")} look${names.length === 1 ? "s" : ""} personal and ${names.length === 1 ? "is" : "are"} exported unmasked: ` +
    `mask ${names.length === 1 ? "it" : "them"} (columns: { ${names[0]}: { mask: hmac_sha256 } }) or list ${names.length === 1 ? "it" : "them"} in allow_unmasked (docs/masking.md)`
  )
}

/** What each masked column of the result becomes, or why it cannot be masked. */
const planMasks = (spec: Pick<ExportConfig, "name" | "masks">, schema: BatchSchema): ReadonlyArray<MaskMethod | undefined> | ConfigError => {
  const byColumn = new Map(spec.masks.map((mask) => [mask.column, mask.method]))
  for (const mask of spec.masks) {
    const column = schema.columns.find((candidate) => candidate.name === mask.column)
    if (column === undefined) {
      return new ConfigError({
        path: `export '${spec.name}'.columns.${mask.column}.mask`,
        message: `column '${mask.column}' is not in the export's result, so its mask would protect nothing`,
        hint: `the result has: ${schema.columns.map((candidate) => candidate.name).join(", ")}`
      })
    }
    const problem = maskProblem(mask.method, column.type)
    if (problem !== undefined) {
      return new ConfigError({ path: `export '${spec.name}'.columns.${mask.column}.mask`, message: problem, hint: "use hmac_sha256, hash_sha256, redact or drop" })
    }
  }
  return schema.columns.map((column) => byColumn.get(column.name))
}

/** The schema the export writes after its masks: dropped columns gone, digests as text. */
export const maskedSchema = (spec: Pick<ExportConfig, "name" | "masks">, schema: BatchSchema): BatchSchema | ConfigError => {
  if (spec.masks.length === 0) return schema
  const methods = planMasks(spec, schema)
  if (methods instanceof ConfigError) return methods
  return {
    columns: schema.columns.flatMap((column, i) => {
      const method = methods[i]
      if (method === undefined) return [column]
      if (method === "drop") return []
      return [{ ...column, type: maskedType(method, column.type), sourceType: `${column.sourceType ?? column.type.kind} (${method})` }]
    })
  }
}

/**
 * Masks a result's batches before anything else reads them (a transform, the meta columns, partitioning, gates, the
 * encoder). Columns whose values the run keeps in its state (a cursor, a chunk or page key) cannot be masked: the
 * state would hold what the mask hides.
 */
export const maskResult = <E>(
  spec: Pick<ExportConfig, "name" | "masks">,
  key: MaskKey | undefined,
  kept: ReadonlyArray<string>,
  input: { readonly schema: BatchSchema; readonly batches: Stream.Stream<Batch, E> }
): Effect.Effect<{ readonly schema: BatchSchema; readonly batches: Stream.Stream<Batch, E> }, RivetError> => {
  if (spec.masks.length === 0) return Effect.succeed(input)
  const keptMasked = spec.masks.find((mask) => kept.includes(mask.column))
  if (keptMasked !== undefined) {
    return Effect.fail(
      new ConfigError({
        path: `export '${spec.name}'.columns.${keptMasked.column}.mask`,
        message: `column '${keptMasked.column}' is masked, but the run keeps its values in the state (cursor, chunk or page key)`,
        hint: "key the export on another column, or remove the mask"
      })
    )
  }
  const methods = planMasks(spec, input.schema)
  if (methods instanceof ConfigError) return Effect.fail(methods)
  const schema = maskedSchema(spec, input.schema) as BatchSchema
  if (methods.includes("hmac_sha256") && key === undefined) {
    return Effect.fail(new ConfigError({ path: "masking", message: "hmac_sha256 masks need a key", hint: "masking: { key_env: RIVET_MASK_KEY }" }))
  }
  const secret = key === undefined ? new Uint8Array(0) : Redacted.value(key.key)
  const mask = (batch: Batch): Batch => ({
    schema,
    rowCount: batch.rowCount,
    columns: batch.columns.flatMap((data, i) => {
      const method = methods[i]
      if (method === undefined) return [data]
      if (method === "drop") return []
      return [maskColumn(data, input.schema.columns[i]!.type, method, secret)]
    })
  })
  return Effect.succeed({ schema, batches: Stream.map(input.batches, mask) })
}
