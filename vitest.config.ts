import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    fileParallelism: true,
    // Most test files wait on child processes, PostgreSQL and S3 rather than compute: three at a time keep two
    // cores busy (measured: the suite's wall time on the 2-core CI box).
    maxWorkers: 3,
    minWorkers: 1
  }
})
