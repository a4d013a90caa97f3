import * as Schema from "effect/Schema"
import { MASK_METHODS, type MaskMethod } from "../core/columns/mask.js"
import { ConfigError } from "../core/errors.js"

/** `masking:`, decoded: the keys by id (each the environment variable holding it) and the one masks use now. */
export interface MaskingConfig {
  readonly keys: ReadonlyMap<string, string>
  readonly current: string
}

/** One masked column of an export (`columns: { email: { mask: hmac_sha256 } }`). */
export interface ColumnMask {
  readonly column: string
  readonly method: MaskMethod
}

export const MaskMethodSchema = Schema.Literal(...MASK_METHODS).annotations({
  description:
    "Masking before any byte is written (docs/masking.md): hmac_sha256 (keyed, joinable), hash_sha256 (unkeyed: not for personal data), redact (NULL), last4 (text: all but the last four characters as *), drop (not exported)."
})

const KeyEnv = Schema.String.annotations({ description: "The environment variable holding the key (at least 16 bytes); never printed." })

/** The top-level `masking:` block as written in the YAML. */
export const MaskingBlock = Schema.Struct({
  key_env: Schema.optional(KeyEnv),
  keys: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Struct({ key_env: KeyEnv }) }).annotations({
      description: "Several keys for rotation, by id: { v1: { key_env: MASK_KEY_V1 }, v2: { key_env: MASK_KEY_V2 } }; current names the one used."
    })
  ),
  current: Schema.optional(Schema.String.annotations({ description: "With keys: the id of the key masks use now (recorded in each manifest)." }))
}).annotations({ description: "The secret key of hmac_sha256 masks (docs/masking.md)." })

/** The smallest key HMAC-SHA256 masking accepts: shorter keys are guessable. */
export const MIN_MASK_KEY_BYTES = 16

/** Where each key's variable is named in the config: `masking.key_env`, or `masking.keys.<id>.key_env`. */
export const maskKeyPaths = (masking: MaskingConfig): ReadonlyArray<{ readonly id: string; readonly variable: string; readonly path: string }> =>
  [...masking.keys].map(([id, variable]) => ({
    id,
    variable,
    path: id === DEFAULT_KEY_ID && masking.keys.size === 1 ? "masking.key_env" : `masking.keys.${id}.key_env`
  }))

/** Why the value of a key's variable cannot be a mask key, if it cannot (an unset one is reported as unset). */
export const shortMaskKey = (variable: string, value: string): string | undefined => {
  const bytes = new TextEncoder().encode(value).byteLength
  return bytes >= MIN_MASK_KEY_BYTES ? undefined : `environment variable ${variable} holds ${bytes} bytes; a mask key needs at least ${MIN_MASK_KEY_BYTES}`
}

/** The id a single `key_env` key is recorded under. */
export const DEFAULT_KEY_ID = "default"

/** The decoded block, or what is wrong with it (at `masking…` paths). */
export const readMasking = (block: typeof MaskingBlock.Type): MaskingConfig | ConfigError => {
  if (block.key_env !== undefined && block.keys !== undefined) {
    return new ConfigError({ path: "masking", message: "give either key_env or keys (with current), not both", hint: "keys: { v1: { key_env: MASK_KEY } }, current: v1" })
  }
  if (block.key_env !== undefined) {
    if (block.current !== undefined) return new ConfigError({ path: "masking.current", message: "names a key of keys:, which this block does not have", hint: "remove current, or move key_env under keys:" })
    return { keys: new Map([[DEFAULT_KEY_ID, block.key_env]]), current: DEFAULT_KEY_ID }
  }
  const keys = new Map(Object.entries(block.keys ?? {}).map(([id, key]) => [id, key.key_env]))
  if (keys.size === 0) return new ConfigError({ path: "masking", message: "has no key", hint: "masking: { key_env: RIVET_MASK_KEY }" })
  if (block.current === undefined || !keys.has(block.current)) {
    return new ConfigError({
      path: "masking.current",
      message: block.current === undefined ? "is required with keys:" : `names no key of keys: '${block.current}'`,
      hint: `one of: ${[...keys.keys()].join(", ")}`
    })
  }
  return { keys, current: block.current }
}
