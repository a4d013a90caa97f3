import * as Schema from "effect/Schema"
import { ByteSize, Sink } from "rivet-export/plugin"
import { accountNameFromUrl, accountNameProblem, accountUrlProblem, cleartextProblem } from "./account-url.js"

const MiB = 1024 ** 2

/** Smallest `block_size` accepted: an object holds at most 50,000 blocks, so 1 MiB blocks cap it near 48 GiB. */
export const MIN_BLOCK_SIZE = 1 * MiB
/** Azure's largest block (Put Block, service version 2019-12-12 and later). */
export const MAX_BLOCK_SIZE = 4000 * MiB
export const DEFAULT_BLOCK_SIZE = 8 * MiB

const text = Sink.describedString

const containerProblem = (name: string): string | undefined => {
  if (name === "$root" || name === "$web") return undefined
  if (name.includes("/")) return `container '${name}' must be the bare container name: put any folder path in prefix:`
  return /^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$/.test(name)
    ? undefined
    : `container '${name}' is not a valid container name: use 3 to 63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit`
}

const prefixProblem = (prefix: string): string | undefined => {
  if (prefix.startsWith("/")) return `prefix '${prefix}' must not start with '/': blob names are relative to the container, e.g. exports/daily/`
  if (prefix.includes("\\")) return `prefix '${prefix}' must use / between folders, not \\`
  const segments = prefix.split("/")
  if (segments.some((segment) => segment === ".." || segment === ".")) {
    return `prefix '${prefix}' must not contain '.' or '..' segments: write the folder path you want, e.g. exports/daily/`
  }
  if (segments.slice(0, -1).some((segment) => segment === "")) return `prefix '${prefix}' must not contain '//'`
  return undefined
}

const envVarName = (key: string, description: string, example: string) =>
  Sink.envVarNameField({
    key,
    description,
    example,
    looksLikeSecret: (name) => !Sink.isEnvVarName(name) && (/[=;+/?&]/.test(name) || name.length >= 40),
    secret: { what: "a secret", holding: "it", noun: "secret" }
  })

const fields = {
  container: Schema.propertySignature(
    text("Blob container name. The container must already exist; Rivet never creates it.").pipe(
      Schema.filter((name) => containerProblem(name) ?? true)
    )
  ).annotations({
    missingMessage: () => "container is required: the name of an existing blob container, e.g. exports"
  }),
  prefix: Sink.prefixField(
    "Folder-like blob name prefix, e.g. exports/daily/. A missing trailing / is added; a leading /, '.' or '..' segments are rejected.",
    prefixProblem
  ),
  account_url: Schema.optionalWith(
    text(
      "Blob service URL of the storage account, e.g. https://myaccount.blob.core.windows.net, or an emulator's http://127.0.0.1:10000/devstoreaccount1. Use with account_key_env or sas_token_env."
    ).pipe(Schema.filter((url) => accountUrlProblem(url) ?? true)),
    { exact: true }
  ),
  account_name: Schema.optionalWith(
    text(
      "Storage account name, when account_url does not show it (an emulator on a bare host:port). Only with account_key_env."
    ).pipe(Schema.filter((name) => accountNameProblem(name) ?? true)),
    { exact: true }
  ),
  account_key_env: Schema.optionalWith(
    envVarName(
      "account_key_env",
      "Name of the environment variable holding the storage account key (shared key auth). With account_url.",
      "AZURE_STORAGE_KEY"
    ),
    { exact: true }
  ),
  sas_token_env: Schema.optionalWith(
    envVarName(
      "sas_token_env",
      "Name of the environment variable holding a SAS token (needs create, write, read, list; delete for rivet doctor's probe). With account_url.",
      "AZURE_STORAGE_SAS_TOKEN"
    ),
    { exact: true }
  ),
  connection_string_env: Schema.optionalWith(
    envVarName(
      "connection_string_env",
      "Name of the environment variable holding a storage connection string (account key or SAS). Replaces account_url and its credential.",
      "AZURE_STORAGE_CONNECTION_STRING"
    ),
    { exact: true }
  ),
  allow_http: Schema.optionalWith(
    Schema.Boolean.annotations({
      description:
        "Accept a plain http:// endpoint on a non-loopback host (an emulator on a trusted network). Loopback emulators never need it."
    }),
    { exact: true }
  ),
  block_size: Schema.optionalWith(
    ByteSize.pipe(
      Schema.filter((bytes) =>
        bytes >= MIN_BLOCK_SIZE && bytes <= MAX_BLOCK_SIZE
          ? true
          : `block_size ${bytes} bytes is outside the accepted range: use 1MiB to 4000MiB (default 8MiB)`
      )
    ),
    { exact: true, default: () => DEFAULT_BLOCK_SIZE }
  ).annotations({ description: "Size of the staged blocks of large blobs, 1MiB to 4000MiB, e.g. 16MiB. Default 8MiB." }),
  upload_concurrency: Sink.uploadConcurrencyField("Blocks of one blob staged at once, 1 to 64. Default 4.")
}

type Fields = Schema.Struct.Type<typeof fields>

const AUTH_CHOICES =
  "set connection_string_env, or account_url with account_key_env (shared key) or sas_token_env (SAS token)"

const authIssues = (config: Fields): ReadonlyArray<Schema.FilterIssue> => {
  const issue = (path: string, message: string): Schema.FilterIssue => ({ path: [path], message })
  if (config.connection_string_env !== undefined) {
    const extra = (["account_url", "account_name", "account_key_env", "sas_token_env"] as const).filter(
      (key) => config[key] !== undefined
    )
    return extra.map((key) =>
      issue(key, `choose one auth source: connection_string_env already names the account and its credential, so remove ${key}`)
    )
  }
  if (config.account_url === undefined) {
    return [issue("account_url", `no credentials configured: ${AUTH_CHOICES}`)]
  }
  const issues: Array<Schema.FilterIssue> = []
  const hasKey = config.account_key_env !== undefined
  const hasSas = config.sas_token_env !== undefined
  if (hasKey && hasSas) issues.push(issue("sas_token_env", "choose one: account_key_env or sas_token_env"))
  if (!hasKey && !hasSas) {
    issues.push(
      issue("account_key_env", "account_url needs a credential: set account_key_env or sas_token_env (or use connection_string_env instead)")
    )
  }
  if (config.account_name !== undefined && !hasKey) {
    issues.push(issue("account_name", "account_name is only used with account_key_env: remove it"))
  }
  if (hasKey && config.account_name === undefined && accountNameFromUrl(config.account_url) === undefined) {
    issues.push(
      issue(
        "account_name",
        `account_url '${config.account_url}' does not show the account name: set account_name, or write the account in the URL path (http://127.0.0.1:10000/devstoreaccount1)`
      )
    )
  }
  const cleartext = cleartextProblem(config.account_url, config.allow_http === true, `account_url '${config.account_url}'`)
  if (cleartext !== undefined) issues.push(issue("account_url", cleartext))
  return issues
}

/**
 * The `destination:` block of an Azure export (without `type`). Decoding normalises `prefix`, applies defaults,
 * checks that exactly one auth source is configured and runs the plain-http guard — all before any network I/O.
 */
export const AzureConfig = Schema.Struct(fields)
  .pipe(Schema.filter((config) => authIssues(config)))
  .annotations({
    identifier: "AzureBlobDestination",
    description: "Azure Blob Storage (block blobs), or a loopback emulator such as Azurite."
  })

/** The decoded Azure destination config. */
export type AzureConfig = typeof AzureConfig.Type
