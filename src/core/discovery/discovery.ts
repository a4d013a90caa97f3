import type * as Effect from "effect/Effect"
import type { ConfigError, SourceError } from "../errors.js"
import type { Discovery } from "./model.js"

/** What `rivet init` asks a source for: the tables of a live database, to write a starter config from. */
export interface DiscoverRequest {
  readonly url: string
  /** Where the URL came from, for messages (e.g. "environment variable DATABASE_URL (--source-env)"). */
  readonly origin?: string | undefined
  /** The schema (PostgreSQL) or database (MySQL) to list; absent, the source's default. */
  readonly schema?: string | undefined
  /** Only these tables (`name` or `schema.name`); empty: every table. */
  readonly tables: ReadonlyArray<string>
}

/** A source's `rivet init` capability: which connection URLs it takes, and how it lists their tables. */
export interface SourceDiscovery {
  /** URL schemes without the colon, e.g. `["postgres", "postgresql"]`. */
  readonly schemes: ReadonlyArray<string>
  readonly discover: (request: DiscoverRequest) => Effect.Effect<Discovery, SourceError | ConfigError>
}
