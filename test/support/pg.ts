import { randomBytes } from "node:crypto"
import type postgres from "postgres"
import { inject } from "vitest"

/** The PostgreSQL URL every test uses (set up by test/support/global-setup.ts). */
export const testPgUrl = (): string => inject("pgUrl")

/**
 * A login role of the test's own, with a random suffix (so a role left behind by a killed run, perhaps holding rights
 * in another database, never meets this one) and a password.
 */
export const loginRoleName = (prefix: string): string => `${prefix}_${randomBytes(3).toString("hex")}`

/** Drops what the role owns or was granted in this database, then the role. */
export const dropLoginRole = (sql: postgres.Sql, role: string) =>
  sql.unsafe(`DO $$ BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = '${role}') THEN
      EXECUTE 'DROP OWNED BY "${role}"'; EXECUTE 'DROP ROLE "${role}"';
    END IF;
  END $$`)
