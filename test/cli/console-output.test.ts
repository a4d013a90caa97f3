import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import { describe, expect, it } from "@effect/vitest"
import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { checkCommand } from "../../src/cli/commands/check.js"
import { pluginsCommand } from "../../src/cli/commands/plugins.js"
import { ExitCode } from "../../src/cli/exit.js"
import { writeConfig } from "../support/cli.js"

/** Runs one command in this process with a Console that records what it prints instead of writing it. */
const captured = <Name extends string, R, E, A>(command: Command.Command<Name, R, E, A>, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const stdout: Array<string> = []
    const stderr: Array<string> = []
    const real = yield* Effect.console
    const record = (into: Array<string>) => (...args: ReadonlyArray<unknown>) => void into.push(`${args.join(" ")}\n`)
    const recording: Console.Console = {
      ...real,
      log: (...args) => Effect.sync(() => record(stdout)(...args)),
      error: (...args) => Effect.sync(() => record(stderr)(...args)),
      unsafe: { ...real.unsafe, log: record(stdout), error: record(stderr) }
    }
    const result: unknown = yield* Effect.withConsole(
      Command.run(command, { name: "rivet", version: "0.0.0" })(["node", "rivet", ...args]),
      recording
    )
    return { code: result instanceof ExitCode ? result.code : undefined, stdout: stdout.join(""), stderr: stderr.join("") }
  }).pipe(Effect.provide(NodeContext.layer))

describe("the CLI's output goes through Console", () => {
  it.effect("rivet check: the warning on stderr, the OK line on stdout, byte for byte", () =>
    Effect.gen(function* () {
      const file = writeConfig(
        "source: { type: postgres, url: 'postgres://postgres@127.0.0.1:1/none' }\nexports:\n  - name: big\n    query: select 1\n    batch_size: 200000\n    destination: { type: local, path: out }\n"
      )
      const result = yield* captured(checkCommand, ["-c", file]).pipe(
        Effect.ensuring(Effect.sync(() => fs.rmSync(path.dirname(file), { recursive: true, force: true })))
      )
      expect(result.code).toBe(0)
      expect(result.stdout).toBe(`OK: ${file}: 1 export(s) valid, 1 warning\n`)
      expect(result.stderr).toMatch(/^Warning: exports\[0\]\.batch_size \(line 5\): batch_size 200000 holds 200000 rows in memory[^\n]*\nHint: [^\n]+\n$/)
    })
  )

  it.effect("rivet plugins --json: one JSON document on stdout, nothing on stderr", () =>
    Effect.gen(function* () {
      const result = yield* captured(pluginsCommand, ["--json"])
      expect(result.code).toBe(0)
      expect(result.stderr).toBe("")
      expect(result.stdout.endsWith("}\n")).toBe(true)
      const listed = JSON.parse(result.stdout) as { readonly sources: ReadonlyArray<{ readonly type: string }> }
      expect(listed.sources.map((source) => source.type)).toContain("postgres")
    })
  )
})
