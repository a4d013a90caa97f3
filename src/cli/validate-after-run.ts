import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type { RivetConfig } from "../config/model.js"
import type { RivetError } from "../core/errors.js"
import type { ExportRun } from "../engine/run.js"
import { failures } from "../commands/validate/findings.js"
import { validateExport } from "../commands/validate/validate.js"
import { integrityErrorOf, renderValidation } from "./validate-render.js"

/** Untracked objects listed after a run before the rest are only counted. */
const MAX_UNTRACKED_AFTER_RUN = 3

/**
 * `rivet run --validate`: validates, right after the run, every export that succeeded and wrote markers (stdout
 * and skipped runs have nothing to check), printing the findings on stderr — or, with `--json`, one `validated`
 * event per export. Returns the errors: an IntegrityError (exit 3) per export that failed validation, and the
 * error that stopped a check. Warnings (untracked objects) never fail here; `rivet validate --strict` is for that.
 */
export const validateAfterRun = (
  config: RivetConfig,
  runs: ReadonlyArray<ExportRun>,
  options: { readonly json: boolean }
): Effect.Effect<ReadonlyArray<RivetError>> =>
  Effect.gen(function* () {
    const errors: Array<RivetError> = []
    for (const run of runs) {
      if (run._tag !== "success" || run.result.status !== "success" || run.result.manifest === undefined) continue
      const spec = config.exports.find((candidate) => candidate.name === run.result.exportName)
      if (spec === undefined) continue
      // This run's parts only: the earlier runs' were checked when they ran (`rivet validate` checks them all).
      const outcome = yield* Effect.either(validateExport(config, spec, { runs: [run.result.runId] }))
      if (outcome._tag === "Left") {
        errors.push(outcome.left)
        continue
      }
      const validation = outcome.right
      if (options.json) {
        yield* Console.error(
          JSON.stringify({
            event: "validated",
            time: new Date().toISOString(),
            export: validation.exportName,
            ok: failures(validation).length === 0,
            runs: validation.runs,
            parts: validation.parts,
            rows: validation.rows,
            findings: validation.findings
          })
        )
      } else {
        yield* Console.error(renderValidation(validation, MAX_UNTRACKED_AFTER_RUN).join("\n"))
      }
      const error = integrityErrorOf(validation)
      if (error) errors.push(error)
    }
    return errors
  })
