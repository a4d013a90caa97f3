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
    // cores busy (on the 2-core CI box the main run took 454 s instead of 715 s with two at a time).
    maxWorkers: 3,
    minWorkers: 1
  }
})
