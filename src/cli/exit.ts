import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { exitCodeOf, type ConfigError, type RivetError } from "../core/errors.js"
import { renderError } from "./render.js"

/**
 * Thrown-free way for commands to end the process with a code: commands compute the code and the
 * entry point sets `process.exitCode`, so finalizers (cursors, uploads, embedded servers) still run.
 */
export class ExitCode {
  constructor(readonly code: number) {}
}

/** `verbose` adds where an unexpected defect was thrown (a PluginError's `detail`). */
export const printErrors = (
  errors: ReadonlyArray<RivetError>,
  options: { readonly json?: boolean; readonly verbose?: boolean } = {}
) =>
  Effect.forEach(
    errors,
    (error) =>
      Console.error(
        options.json
          ? `${JSON.stringify({
              event: "error",
              time: new Date().toISOString(),
              kind: error._tag,
              message: error.message,
              ...(error.hint ? { hint: error.hint } : {}),
              ...(error._tag === "ConfigError" ? { path: error.path } : {}),
              ...(options.verbose && detailOf(error) ? { detail: detailOf(error) } : {}),
              exit_code: exitCodeOf(error)
            })}`
          : `${renderError(error)}${options.verbose && detailOf(error) ? `\nDetail: ${detailOf(error)}` : ""}`
      ),
    { discard: true }
  )

const detailOf = (error: RivetError): string | undefined => (error._tag === "PluginError" ? error.detail : undefined)

/** Exit code precedence: drift (4) > integrity (3) > retryable (2) > config/other (1). */
export const worstExitCode = (errors: ReadonlyArray<RivetError>): number => {
  const codes = errors.map(exitCodeOf)
  if (codes.length === 0) return 0
  for (const code of [4, 3, 2]) if (codes.includes(code)) return code
  return 1
}

export const configFailure = (errors: ReadonlyArray<ConfigError>) =>
  Effect.as(printErrors(errors), new ExitCode(1))
