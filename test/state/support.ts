import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import type { StateError } from "../../src/core/errors.js"
import { postgresStateLayer } from "../../src/state/postgres.js"
import { sqliteStateLayer } from "../../src/state/sqlite.js"
import type { StateStore } from "../../src/state/store.js"

/** One empty state database: a layer opening it (again and again) and raw SQL access for white-box checks. */
export interface StateTarget {
  readonly layer: () => Layer.Layer<StateStore, StateError>
  readonly query: (sql: string) => Promise<ReadonlyArray<Record<string, unknown>>>
  /** The file path or URL the layer opens. */
  readonly url: string
}

/** A backend under test: `fresh()` gives an isolated, empty state; `teardown()` removes everything it made. */
export interface StateBackend {
  readonly fresh: () => Promise<StateTarget>
  readonly teardown: () => Promise<void>
}

/** SQLite files in a temp directory, one per target. */
export const sqliteBackend = (): StateBackend => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-state-test-"))
  let n = 0
  return {
    fresh: async () => {
      const file = path.join(dir, `state-${n++}.db`)
      return {
        url: file,
        layer: () => sqliteStateLayer(file),
        query: async (sql) => {
          const db = new Database(file)
          try {
            const statement = db.prepare(sql)
            return statement.reader ? (statement.all() as Array<Record<string, unknown>>) : (statement.run(), [])
          } finally {
            db.close()
          }
        }
      }
    },
    teardown: async () => fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** A throw-away database on the test server; each target is a fresh schema in it, chosen with `?search_path=`. */
export const postgresBackend = (serverUrl: string): StateBackend => {
  const database = `rivet_state_${Math.random().toString(36).slice(2, 10)}`
  const dbUrl = new URL(serverUrl)
  dbUrl.pathname = `/${database}`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  const clients: Array<postgres.Sql> = []
  let created: Promise<unknown> | undefined
  let n = 0
  return {
    fresh: async () => {
      created ??= admin.unsafe(`CREATE DATABASE ${database}`)
      await created
      const schema = `s${n++}`
      const url = `${dbUrl.toString()}?search_path=${schema}`
      const sql = postgres(url, { max: 1, onnotice: () => {} })
      clients.push(sql)
      await sql.unsafe(`CREATE SCHEMA ${schema}`)
      return {
        url,
        layer: () => postgresStateLayer(url),
        query: async (text) => [...(await sql.unsafe(text))]
      }
    },
    teardown: async () => {
      await Promise.all(clients.map((sql) => sql.end({ timeout: 5 })))
      if (created) await admin.unsafe(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
      await admin.end({ timeout: 5 })
    }
  }
}

/** Runs an effect needing the store against a layer. */
export const withStore = <A, E>(layer: Layer.Layer<StateStore, StateError>, effect: Effect.Effect<A, E, StateStore>) =>
  Effect.runPromise(Effect.provide(effect, layer))

/** The failure of an effect needing the store (fails the test when it succeeds). */
export const failureOf = async <A>(
  layer: Layer.Layer<StateStore, StateError>,
  effect: Effect.Effect<A, StateError, StateStore>
): Promise<StateError> =>
  Effect.runPromise(Effect.flip(Effect.provide(effect, layer)))
