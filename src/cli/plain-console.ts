import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { isTerminal } from "./terminal.js"

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g

const wantsPlain = (stream: "stdout" | "stderr"): boolean => !isTerminal(stream) || (process.env["NO_COLOR"] ?? "") !== ""

const plain = (args: ReadonlyArray<unknown>) => args.map((arg) => (typeof arg === "string" ? arg.replace(ANSI, "") : arg))

/**
 * @effect/cli styles help, usage errors and completions with ANSI codes whatever the output is; a pipe, a log file
 * or NO_COLOR gets them as plain text instead.
 */
export const withPlainConsole = <A, E, R>(program: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(Effect.console, (console) => {
    const stdout = wantsPlain("stdout")
    const stderr = wantsPlain("stderr")
    if (!stdout && !stderr) return program
    const unsafe = console.unsafe
    const adjusted: Console.Console = {
      ...console,
      log: (...args) => console.log(...(stdout ? plain(args) : args)),
      error: (...args) => console.error(...(stderr ? plain(args) : args)),
      unsafe: {
        ...unsafe,
        log: (...args) => unsafe.log(...(stdout ? plain(args) : args)),
        error: (...args) => unsafe.error(...(stderr ? plain(args) : args))
      }
    }
    return Effect.withConsole(program, adjusted)
  })
