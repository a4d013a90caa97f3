import * as Console from "effect/Console"
import * as Effect from "effect/Effect"

/**
 * What the CLI prints goes through Effect's `Console` (`Console.log` → stdout, `Console.error` → stderr), which
 * adds the newline: a test captures a command's output with `Effect.withConsole`. This module holds that one way
 * of printing text already cut into lines, and whether a stream is a terminal (the live view of `rivet run`,
 * `live-view.ts`, redraws its lines on stderr through log-update, which writes to the stream itself).
 */

/** Text made of whole lines, each ending in "\n" ("" prints nothing), on stdout or stderr through `Console`. */
export const printLines = (stream: "stdout" | "stderr", text: string): Effect.Effect<void> =>
  text === "" ? Effect.void : (stream === "stdout" ? Console.log : Console.error)(text.endsWith("\n") ? text.slice(0, -1) : text)

/** Whether the stream is a terminal (not a pipe or a file): `Console` does not say. */
export const isTerminal = (stream: "stdout" | "stderr"): boolean => process[stream].isTTY === true
