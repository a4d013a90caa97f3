import { describe, expect, it } from "vitest"
import { runCli } from "../support/cli.js"

describe("help output", () => {
  it("is plain text when written to a pipe (no ANSI escape codes), for the root and a subcommand", async () => {
    for (const args of [["--help"], ["run", "--help"], ["state", "show", "--help"]]) {
      const result = await runCli(args)
      expect(result.code, args.join(" ")).toBe(0)
      expect(result.stdout).toContain("USAGE")
      expect(result.stdout).not.toContain("\u001b[")
    }
  })
})
