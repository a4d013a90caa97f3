import { defineConfig } from "vitest/config"

// Its own config, so vitest does not pick up the Rivet repository's one from a parent directory.
export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000
  }
})
