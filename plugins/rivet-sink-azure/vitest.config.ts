import { defineConfig } from "vitest/config"

export default defineConfig({
  resolve: {
    // rivet-export/testing lives in the repo root and imports @effect/vitest and vitest from there. Without dedupe its
    // describe/it would register with that second copy of vitest, and the conformance tests would silently vanish.
    dedupe: ["vitest", "@effect/vitest", "effect"]
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks"
  }
})
