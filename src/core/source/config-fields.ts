import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { BLOCK_TLS_MODES } from "./tls.js"

/**
 * Config fields database sources share: the connection URL (`url`, redacted, checked by the source's own parser)
 * and the name of an environment variable holding it (`url_env`), and whole seconds with a default. Neither
 * message ever echoes a URL: a user who misread `url_env` may have pasted one, password included.
 */
export interface ConnectionUrlOptions {
  /** Why a URL cannot be used (message and hint), or undefined when it can. */
  readonly urlProblem: (url: string) => { readonly message: string; readonly hint: string } | undefined
  /** The `url` key's description (the URL's shape, for docs and the JSON Schema). */
  readonly description: string
  /** A typical variable and URL scheme for the messages, e.g. `DATABASE_URL` and `postgres`. */
  readonly exampleVariable: string
  readonly scheme: string
  /** The port a connection given by its parts uses without `port`, said in its description. */
  readonly defaultPort?: number | undefined
}

const urlEnvProblem = (name: string, options: ConnectionUrlOptions): string | undefined => {
  const variable = options.exampleVariable
  if (name.includes("://") || name.includes("@")) {
    return `url_env must be the NAME of an environment variable holding the connection URL (e.g. ${variable}), not the URL itself: export ${variable}=${options.scheme}://… and write url_env: ${variable}`
  }
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
    ? undefined
    : `url_env must be the name of an environment variable (letters, digits and _), e.g. ${variable}`
}

/** `url` and `url_env`, both optional: the source's own filter says which combination it needs. */
export const connectionUrlFields = (options: ConnectionUrlOptions) => ({
  url: Schema.optional(
    // The default message would quote a non-string value (`actual [...]`), which may hold the password.
    Schema.Redacted(Schema.String.annotations({ message: () => "expected a string: the connection URL (value not shown)" }))
      .pipe(
        Schema.filter((url) => {
          const found = options.urlProblem(Redacted.value(url))
          return found === undefined ? true : `${found.message}; ${found.hint}`
        })
      )
      .annotations({ description: options.description })
  ),
  url_env: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "Name of an environment variable holding the connection URL."
    }).pipe(Schema.filter((name) => urlEnvProblem(name, options) ?? true))
  ),
  url_file: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "A file holding the connection URL (a mounted secret), relative to the config file's directory."
    })
  ),
  host: Schema.optional(
    Schema.NonEmptyString.annotations({ description: "The server's host name or address: a connection given by its parts, with user and database." })
  ),
  port: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 65535)).annotations({
      description: `The server's port${options.defaultPort === undefined ? "" : ` (default ${options.defaultPort})`}, with host.`,
      message: () => "port must be a whole number from 1 to 65535"
    })
  ),
  user: Schema.optional(Schema.NonEmptyString.annotations({ description: "The user to log in as, with host." })),
  database: Schema.optional(Schema.NonEmptyString.annotations({ description: "The database to read, with host." })),
  password: Schema.optional(
    Schema.Redacted(Schema.String.annotations({ message: () => "expected a string: the password (value not shown)" })).annotations({
      description: "The password, with host; prefer password_env or password_file (a password in the config file is a warning)."
    })
  ),
  password_env: Schema.optional(
    Schema.NonEmptyString.annotations({ description: "Name of an environment variable holding the password, with host." }).pipe(
      Schema.filter((name) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) ? true : "password_env must be the NAME of an environment variable (letters, digits and _), e.g. PGPASSWORD"))
    )
  ),
  password_file: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "A file holding the password (its first line), relative to the config file's directory, with host."
    })
  )
})

/** A whole number of seconds (0 allowed) with a default. */
export const secondsField = (description: string, fallback: number) =>
  Schema.optionalWith(Schema.NonNegativeInt.annotations({ description }), { default: () => fallback })

/** A block with `connectionUrlFields` checks its keys with `connectionProblem` and resolves them with `resolveConnection`. */
export {
  type ConnectionFailure,
  type ConnectionKeys,
  connectionProblem,
  type ConnectionTemplate,
  type ResolvedConnection,
  resolveConnection
} from "./connection.js"

const tlsPath = (what: string) =>
  Schema.optional(
    Schema.NonEmptyString.annotations({
      description: `${what} (PEM), relative to the config file's directory.`
    })
  )

/** The `tls:` block of a database source; `urlParameters` names the URL's equivalents in the server's spelling. */
export const tlsBlock = (options: { readonly urlParameters: string; readonly passphrase?: string }) =>
  Schema.Struct({
    mode: Schema.optional(
      Schema.Literal(...BLOCK_TLS_MODES).annotations({
        description:
          "`disable`: no TLS. `require`: encrypted, the certificate not checked (checked against `ca_file` when one is set, as libpq does). `verify-ca`: the certificate must chain to `ca_file` (or Node's default CAs). `verify-full` (the default): also the host name must match the certificate."
      })
    ),
    ca_file: tlsPath("CA certificate(s) the server's certificate must chain to; without it, Node's default CA store"),
    cert_file: tlsPath("Client certificate, for servers that ask for one (with `key_file`)"),
    key_file: tlsPath(`Private key of the client certificate (unencrypted${options.passphrase === undefined ? "" : `, or ${options.passphrase}`})`),
    accept_invalid_hostnames: Schema.optional(
      Schema.Boolean.annotations({
        description: "With `verify-full`: do not check the host name (the same as `verify-ca`)."
      })
    )
  }).annotations({
    description: `TLS to the server. ${options.urlParameters} say the same; when both are given they must agree.`
  })
