import * as Schema from "effect/Schema"

/**
 * Config fields that object-store sinks share (S3, Azure). Descriptions go on the innermost (encoded-side)
 * schema of each field: effect's JSON Schema generator works on the encoded side, where refinements and
 * property-signature annotations are dropped.
 */
export const describedString = (description: string) => Schema.String.annotations({ description })

/** `exports/daily` → `exports/daily/`; `/x/` → `x/`; empty stays empty. */
export const normalizePrefix = (prefix: string): string => {
  const trimmed = prefix.replace(/^\/+/, "")
  return trimmed === "" || trimmed.endsWith("/") ? trimmed : `${trimmed}/`
}

/** An optional key prefix: `problem` refuses a prefix (a message) or accepts it (undefined); decoding normalizes it. */
export const prefixField = (description: string, problem: (prefix: string) => string | undefined) =>
  Schema.optionalWith(
    Schema.transform(describedString(description).pipe(Schema.filter((prefix) => problem(prefix) ?? true)), Schema.String, {
      strict: true,
      decode: normalizePrefix,
      encode: (prefix) => prefix
    }),
    { exact: true }
  )

/** What an `*_env` key names and how to recognise a pasted secret instead of a variable name. */
export interface EnvVarNameOptions {
  /** The config key: `access_key_env`. */
  readonly key: string
  readonly description: string
  /** A variable name to suggest: `AWS_ACCESS_KEY_ID`. */
  readonly example: string
  /** True when the text looks like the secret itself (checked first). */
  readonly looksLikeSecret: (name: string) => boolean
  /** How the message names what was pasted and the variable's content: `{ what: "an access key", holding: "the key", noun: "key" }`. */
  readonly secret: { readonly what: string; readonly holding: string; readonly noun: string }
}

const ENV_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** The name of an environment variable holding a secret. The value is never echoed: it may be the secret itself. */
export const envVarNameField = (options: EnvVarNameOptions) =>
  describedString(options.description).pipe(
    Schema.filter((name) => {
      const { key, example, secret } = options
      if (options.looksLikeSecret(name)) {
        return `${key} looks like ${secret.what} itself; it must be the NAME of an environment variable holding ${secret.holding} (e.g. ${example}). Never put credentials in the config, and rotate that ${secret.noun} if it was committed`
      }
      return ENV_VAR_NAME.test(name)
        ? true
        : `${key} must be the name of an environment variable (letters, digits and _), e.g. ${example}`
    })
  )

/** True for text that is a valid environment variable name. */
export const isEnvVarName = (name: string): boolean => ENV_VAR_NAME.test(name)

/** `upload_concurrency`: blocks of one object written at once, 1 to 64, default 4. */
export const uploadConcurrencyField = (description: string) =>
  Schema.optionalWith(
    Schema.Number.annotations({ description }).pipe(
      Schema.filter((n) =>
        Number.isInteger(n) && n >= 1 && n <= 64 ? true : `upload_concurrency must be a whole number from 1 to 64, got ${n}`
      )
    ),
    { exact: true, default: () => 4 }
  )
