import type { TestProject } from "vitest/node"
import postgres from "postgres"

const DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/test"

const reachable = async (url: string): Promise<boolean> => {
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await sql`select 1`
    return true
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** Finds the PostgreSQL the tests use: RIVET_TEST_PG_URL, else 127.0.0.1:5432, else (TODO embedded). */
export default async function setup(project: TestProject) {
  const url = process.env["RIVET_TEST_PG_URL"] ?? DEFAULT_PG_URL
  if (!(await reachable(url))) throw new Error(`PostgreSQL is not reachable at ${url}`)
  project.provide("pgUrl", url)
}

declare module "vitest" {
  export interface ProvidedContext {
    pgUrl: string
  }
}
