import {
  AnonymousCredential,
  BlobServiceClient,
  type StoragePipelineOptions,
  StorageSharedKeyCredential
} from "@azure/storage-blob"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { SinkError, type PluginContext } from "rivet-export/plugin"
import { accountNameFromUrl, cleartextProblem, displayUrl } from "./account-url.js"
import type { AzureConfig } from "./config.js"

/** Where the credential comes from, for messages and hints (never the secret itself). */
export type AuthSource =
  | { readonly kind: "connection-string"; readonly env: string }
  | { readonly kind: "account-key"; readonly env: string; readonly accountUrl: string; readonly accountName: string }
  | { readonly kind: "sas"; readonly env: string; readonly accountUrl: string }

/** The one auth source a decoded config names (the schema guarantees exactly one). */
export const authSourceOf = (config: AzureConfig): AuthSource => {
  if (config.connection_string_env !== undefined) return { kind: "connection-string", env: config.connection_string_env }
  const accountUrl = config.account_url ?? ""
  if (config.account_key_env !== undefined) {
    const accountName = config.account_name ?? accountNameFromUrl(accountUrl) ?? ""
    return { kind: "account-key", env: config.account_key_env, accountUrl, accountName }
  }
  return { kind: "sas", env: config.sas_token_env ?? "", accountUrl }
}

export const describeAuthSource = (source: AuthSource): string => {
  switch (source.kind) {
    case "connection-string":
      return `the connection string in $${source.env} (connection_string_env)`
    case "account-key":
      return `the account key in $${source.env} (account_key_env) for account '${source.accountName}'`
    case "sas":
      return `the SAS token in $${source.env} (sas_token_env)`
  }
}

const ENV_KEY = { "connection-string": "connection_string_env", "account-key": "account_key_env", sas: "sas_token_env" }

const setupError = (
  message: string,
  hint: string,
  reason: "InvalidCredentials" | "Unknown" = "InvalidCredentials"
) => new SinkError({ plugin: "azure", operation: "credentials", reason, retryable: false, message, hint })

type Env = PluginContext["env"]

const readSecret = (source: AuthSource, env: Env): Effect.Effect<Redacted.Redacted<string>, SinkError> => {
  const value = env[source.env]
  if (value !== undefined && value.trim() !== "") return Effect.succeed(Redacted.make(value.trim()))
  return Effect.fail(
    setupError(
      `environment variable '${source.env}' named by destination.${ENV_KEY[source.kind]} is ${value === undefined ? "not set" : "empty"}`,
      `Export it before running (export ${source.env}=…); Rivet reads the secret from the environment and never from the config.`
    )
  )
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/**
 * Removes every occurrence of the secret from an SDK message: the whole value and each `key=value` part of a
 * connection string or SAS token, as written and URL-encoded.
 */
export const scrubSecret = (message: string, secret: Redacted.Redacted<string>): string => {
  const value = Redacted.value(secret)
  const values = value.split(/[;&]/).map((part) => part.slice(part.indexOf("=") + 1))
  const parts = [value, ...values].flatMap((part) => [part, encodeURIComponent(part)]).filter((part) => part.length >= 8)
  return parts.reduce((text, part) => text.split(part).join("***"), message)
}

/** The service URL without any query string: a SAS token must never reach a label, a URI or a message. */
const withoutQuery = (url: string): string => {
  try {
    const parsed = new URL(url)
    parsed.search = ""
    return parsed.toString().replace(/\/$/, "")
  } catch {
    return url.replace(/[?#].*$/, "")
  }
}

/** A service client and the account URL it talks to (no query string). */
export interface AzureService {
  readonly client: BlobServiceClient
  readonly serviceUrl: string
  readonly source: AuthSource
  /** Removes the secret from text that came from the SDK. */
  readonly scrub: (text: string) => string
}

/**
 * Reads the configured secret from `context.env` and builds the service client. The SDK's own retries are off
 * (`maxTries: 1`): the runtime owns retries. A connection string's endpoint goes through the same plain-http guard
 * as `account_url`, before any network I/O.
 */
export const makeService = (config: AzureConfig, env: Env): Effect.Effect<AzureService, SinkError> =>
  Effect.gen(function* () {
    const source = authSourceOf(config)
    const secret = yield* readSecret(source, env)
    const options: StoragePipelineOptions = { retryOptions: { maxTries: 1 } }
    const client = yield* Effect.try({
      try: () => {
        switch (source.kind) {
          case "connection-string":
            return BlobServiceClient.fromConnectionString(Redacted.value(secret), options)
          case "account-key":
            return new BlobServiceClient(
              source.accountUrl,
              new StorageSharedKeyCredential(source.accountName, Redacted.value(secret)),
              options
            )
          case "sas": {
            const token = Redacted.value(secret).replace(/^\?/, "")
            return new BlobServiceClient(`${source.accountUrl}?${token}`, new AnonymousCredential(), options)
          }
        }
      },
      catch: (cause) =>
        setupError(
          `cannot use ${describeAuthSource(source)}: ${scrubSecret(describe(cause), secret)}`,
          source.kind === "connection-string"
            ? "Copy the connection string from the portal (Access keys) or use Azurite's well-known development string; Rivet accepts account-key and SAS connection strings."
            : "Check the value of the variable."
        )
    })
    const serviceUrl = withoutQuery(client.url)
    if (source.kind === "connection-string") {
      const what = `the BlobEndpoint of $${source.env} ('${displayUrl(serviceUrl)}')`
      const cleartext = cleartextProblem(serviceUrl, config.allow_http === true, what)
      if (cleartext !== undefined) {
        return yield* setupError(cleartext, "Fix the connection string, or set allow_http: true.", "Unknown")
      }
    }
    return { client, serviceUrl, source, scrub: (text: string) => scrubSecret(text, secret) }
  })
