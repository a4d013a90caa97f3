import type { S3ClientConfig } from "@aws-sdk/client-s3"
import { fromIni, fromNodeProviderChain } from "@aws-sdk/credential-providers"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { SinkError } from "../../../core/errors.js"
import type { S3Config } from "./config.js"

/** What the S3 client is given to sign requests. */
export type S3Credentials = NonNullable<S3ClientConfig["credentials"]>

/** Where credentials come from, in the documented order: one source per destination, never a mix. */
export type CredentialSource =
  | { readonly kind: "default-chain" }
  | {
      readonly kind: "env"
      readonly accessKeyEnv: string
      readonly secretKeyEnv: string
      readonly sessionTokenEnv?: string | undefined
    }
  | { readonly kind: "profile"; readonly profile: string }

/** The credential source a decoded config selects (the schema already rejected mixes). */
export const credentialSourceOf = (config: S3Config): CredentialSource => {
  if (config.access_key_env !== undefined && config.secret_key_env !== undefined) {
    return {
      kind: "env",
      accessKeyEnv: config.access_key_env,
      secretKeyEnv: config.secret_key_env,
      sessionTokenEnv: config.session_token_env
    }
  }
  if (config.aws_profile !== undefined) return { kind: "profile", profile: config.aws_profile }
  return { kind: "default-chain" }
}

/** How a credential source is named in messages and hints. */
export const describeCredentialSource = (source: CredentialSource): string => {
  switch (source.kind) {
    case "default-chain":
      return "the AWS default credential chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws files, container or instance role)"
    case "env":
      return `the environment variables ${source.accessKeyEnv}/${source.secretKeyEnv}${
        source.sessionTokenEnv === undefined ? "" : `/${source.sessionTokenEnv}`
      } (access_key_env/secret_key_env)`
    case "profile":
      return `aws_profile '${source.profile}'`
  }
}

interface StaticKeys {
  readonly accessKeyId: Redacted.Redacted<string>
  readonly secretAccessKey: Redacted.Redacted<string>
  readonly sessionToken?: Redacted.Redacted<string> | undefined
}

// A function rather than a plain object, so the client's config never holds the raw strings.
const staticProvider = (keys: StaticKeys): S3Credentials => async () => ({
  accessKeyId: Redacted.value(keys.accessKeyId),
  secretAccessKey: Redacted.value(keys.secretAccessKey),
  ...(keys.sessionToken === undefined ? {} : { sessionToken: Redacted.value(keys.sessionToken) })
})

type Env = Readonly<Record<string, string | undefined>>

const readEnvVar = (env: Env, name: string, key: string): Effect.Effect<Redacted.Redacted<string>, SinkError> => {
  const value = env[name]
  if (value !== undefined && value !== "") return Effect.succeed(Redacted.make(value))
  return Effect.fail(
    new SinkError({
      plugin: "s3",
      operation: "credentials",
      reason: "InvalidCredentials",
      retryable: false,
      message: `environment variable '${name}' named by destination.${key} is ${value === undefined ? "not set" : "empty"}`,
      hint: `Export it before running (export ${name}=…), or remove access_key_env/secret_key_env to use the AWS default credential chain.`
    })
  )
}

const envKeys = (source: Extract<CredentialSource, { kind: "env" }>, env: Env) =>
  Effect.all({
    accessKeyId: readEnvVar(env, source.accessKeyEnv, "access_key_env"),
    secretAccessKey: readEnvVar(env, source.secretKeyEnv, "secret_key_env"),
    sessionToken:
      source.sessionTokenEnv === undefined
        ? Effect.succeed(undefined)
        : readEnvVar(env, source.sessionTokenEnv, "session_token_env")
  })

/**
 * The SDK's default chain reads `process.env`. When a program passes its own environment, its
 * AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY take the chain's first step (unless it names an AWS_PROFILE, which the
 * chain would prefer); everything else (files, container and instance roles) is the SDK's chain.
 */
const defaultChain = (env: Env): S3Credentials => {
  const accessKeyId = env["AWS_ACCESS_KEY_ID"]
  const secretAccessKey = env["AWS_SECRET_ACCESS_KEY"]
  const sessionToken = env["AWS_SESSION_TOKEN"]
  if (env !== process.env && env["AWS_PROFILE"] === undefined && accessKeyId && secretAccessKey) {
    return staticProvider({
      accessKeyId: Redacted.make(accessKeyId),
      secretAccessKey: Redacted.make(secretAccessKey),
      sessionToken: sessionToken ? Redacted.make(sessionToken) : undefined
    })
  }
  return fromNodeProviderChain()
}

const profileProvider = (profile: string, env: Env): S3Credentials => {
  const filepath = env["AWS_SHARED_CREDENTIALS_FILE"]
  const configFilepath = env["AWS_CONFIG_FILE"]
  return fromIni({
    profile,
    ...(filepath === undefined ? {} : { filepath }),
    ...(configFilepath === undefined ? {} : { configFilepath })
  })
}

/**
 * Resolves the credential provider for a destination. Env-var references are read now (an unset variable fails
 * here, naming it); the default chain and profiles resolve lazily on the first request, and their failures surface
 * as `InvalidCredentials` from that request.
 */
export const resolveCredentials = (source: CredentialSource, env: Env): Effect.Effect<S3Credentials, SinkError> => {
  switch (source.kind) {
    case "env":
      return Effect.map(envKeys(source, env), staticProvider)
    case "profile":
      return Effect.succeed(profileProvider(source.profile, env))
    case "default-chain":
      return Effect.sync(() => defaultChain(env))
  }
}
