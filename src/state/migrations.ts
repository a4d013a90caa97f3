import * as Effect from "effect/Effect"
import { StateError } from "../core/errors.js"
import { int, type SqlBackend } from "./sql.js"

/**
 * The state schema, as ordered steps valid in both SQLite and PostgreSQL: plain TEXT/INTEGER/BIGINT columns,
 * no SERIAL/AUTOINCREMENT, upserts via `ON CONFLICT`. A step is never edited once released — a change is a new
 * step. `rivet_schema_version` records each applied step; a database from a newer Rivet is refused rather than
 * written with assumptions that no longer hold.
 */
export interface Migration {
  readonly version: number
  readonly description: string
  readonly statements: ReadonlyArray<string>
}

export const MIGRATIONS: ReadonlyArray<Migration> = [
  {
    version: 1,
    description: "cursors, runs, units, parts, schema baselines",
    statements: [
      `CREATE TABLE rivet_cursors (
        export_name TEXT PRIMARY KEY,
        column_name TEXT NOT NULL,
        value TEXT NOT NULL,
        value_type TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`,
      `CREATE TABLE rivet_runs (
        run_id TEXT PRIMARY KEY,
        export_name TEXT NOT NULL,
        mode TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL,
        row_count BIGINT NOT NULL,
        part_count BIGINT NOT NULL,
        byte_count BIGINT NOT NULL,
        error TEXT,
        checkpointed INTEGER NOT NULL,
        plan_fingerprint TEXT
      )`,
      "CREATE INDEX rivet_runs_by_export ON rivet_runs (export_name, started_at)",
      `CREATE TABLE rivet_units (
        run_id TEXT NOT NULL REFERENCES rivet_runs (run_id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        spec TEXT NOT NULL,
        status TEXT NOT NULL,
        row_count BIGINT NOT NULL,
        last_key TEXT,
        PRIMARY KEY (run_id, idx)
      )`,
      // A part's path is unique within its run: a re-committed unit or page replaces its own part records.
      `CREATE TABLE rivet_parts (
        run_id TEXT NOT NULL REFERENCES rivet_runs (run_id) ON DELETE CASCADE,
        export_name TEXT NOT NULL,
        unit INTEGER,
        path TEXT NOT NULL,
        row_count BIGINT NOT NULL,
        size_bytes BIGINT NOT NULL,
        fingerprint TEXT NOT NULL,
        committed_at TEXT NOT NULL,
        ordinal INTEGER NOT NULL,
        PRIMARY KEY (run_id, path)
      )`,
      "CREATE INDEX rivet_parts_by_export ON rivet_parts (export_name, committed_at)",
      `CREATE TABLE rivet_schema_baselines (
        export_name TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        columns TEXT NOT NULL,
        updated_at TEXT NOT NULL
      )`
    ]
  },
  {
    version: 2,
    description: "leases: one run per export at a time",
    statements: [
      // One row per held lease. `lease_key` is the export's name today; a unit of work of an export can later be
      // leased under `export/unit` without a new table. `token` tells acquisitions apart (a resumed run reuses
      // its run id); times are ISO-8601 UTC, which order like the instants they name.
      `CREATE TABLE rivet_leases (
        lease_key TEXT PRIMARY KEY,
        export_name TEXT NOT NULL,
        token TEXT NOT NULL,
        run_id TEXT,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        acquired_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
      )`
    ]
  },
  {
    version: 3,
    description: "unit claims: workers of a distributed run lease units",
    // Nullable or defaulted columns only: runs recorded before keep their meaning (no worker, never claimed).
    statements: [
      "ALTER TABLE rivet_units ADD COLUMN worker TEXT",
      "ALTER TABLE rivet_units ADD COLUMN claim_token TEXT",
      "ALTER TABLE rivet_units ADD COLUMN claimed_at TEXT",
      "ALTER TABLE rivet_units ADD COLUMN heartbeat_at TEXT",
      "ALTER TABLE rivet_units ADD COLUMN expires_at TEXT",
      "ALTER TABLE rivet_units ADD COLUMN claims INTEGER NOT NULL DEFAULT 0"
    ]
  },
  {
    version: 4,
    description: "partition values of parts",
    // A part's `partition` values as JSON: a long value's directory holds only its start and a hash, so the manifest
    // of a resumed or distributed run cannot read it back from the path. NULL for unpartitioned and earlier parts.
    statements: ["ALTER TABLE rivet_parts ADD COLUMN partition_values TEXT"]
  },
  {
    version: 5,
    description: "run identity: the source and byte-shaping options a join or resume must match",
    // Nullable: a run recorded before has none, and a join or resume of it is refused (docs/state.md).
    statements: ["ALTER TABLE rivet_runs ADD COLUMN run_identity TEXT"]
  }
]

export const LATEST_SCHEMA_VERSION = MIGRATIONS.reduce((latest, step) => Math.max(latest, step.version), 0)

const VERSION_TABLE = `CREATE TABLE IF NOT EXISTS rivet_schema_version (
  version INTEGER PRIMARY KEY,
  applied_at TEXT NOT NULL
)`

/**
 * Brings the state schema up to date in one transaction; running it again changes nothing. Returns the version
 * the database was at before.
 */
export const migrate = Effect.fn("StateStore.migrate")(function* (backend: SqlBackend) {
  return yield* backend.transaction((tx) =>
    Effect.gen(function* () {
      if (backend.migrationLock !== undefined) yield* tx.all(backend.migrationLock)
      yield* tx.run(VERSION_TABLE)
      const rows = yield* tx.all("SELECT MAX(version) AS version FROM rivet_schema_version")
      const current = int(rows[0]?.["version"])
      if (current > LATEST_SCHEMA_VERSION) {
        return yield* new StateError({
          message: `the state at ${backend.location} has schema version ${current}, written by a newer Rivet; this Rivet knows versions up to ${LATEST_SCHEMA_VERSION}`,
          hint: "upgrade Rivet to the version that last wrote this state (state is never downgraded)"
        })
      }
      const appliedAt = new Date().toISOString()
      for (const step of MIGRATIONS) {
        if (step.version <= current) continue
        for (const statement of step.statements) yield* tx.run(statement)
        yield* tx.run("INSERT INTO rivet_schema_version (version, applied_at) VALUES (?, ?)", [step.version, appliedAt])
      }
      return current
    })
  )
})
