import { defineConfig } from "vitest/config"

/**
 * Files that start the CLI in bulk, change process.env or kill processes, and the embedded server's test: on a worker
 * thread, starting the server of a data directory this process already runs gives that server (chunk lanes share
 * it, src/embedded-postgres/owner.ts) where the test expects a refusal. Each runs in a fresh process.
 */
const ISOLATED = ["test/e2e/**/*.test.ts", "test/examples/**/*.test.ts", "test/embedded-postgres/server.test.ts"]

export default defineConfig({
  test: {
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: true,
    // Most test files wait on child processes, PostgreSQL and S3 rather than compute: three at a time keep two
    // cores busy (on the 2-core CI box the main run took 454 s instead of 715 s with two at a time). As many
    // workers at the start as at most: a pool that shrinks while files share a worker fails the run with
    // tinypool's "Terminating worker thread".
    maxWorkers: 3,
    minWorkers: 3,
    // Isolation is a pool's setting, not a project's: in-process tests run on threads that keep their loaded
    // modules from file to file (loading Effect and the sources anew for each file cost these ~150 CPU-s of ~330 on
    // the 2-core CI box), the others each in a fresh process.
    poolOptions: { threads: { isolate: false }, forks: { isolate: true } },
    projects: [
      { extends: true, test: { name: "unit", include: ["test/**/*.test.ts"], exclude: ISOLATED, pool: "threads" } },
      { extends: true, test: { name: "e2e", include: ISOLATED, pool: "forks" } }
    ]
  }
})
