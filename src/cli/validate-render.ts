import { exitCodeOf, IntegrityError, type RivetError } from "../core/errors.js"
import { type ExportValidation, failures, type Finding, warnings } from "../commands/validate/findings.js"
import type { ExportValidationResult } from "../commands/validate/validate.js"
import { formatCount } from "./render.js"

// Terminal control bytes from object keys must not reach the user's terminal.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g

const plural = (count: number, word: string) => `${formatCount(count)} ${word}${count === 1 ? "" : "s"}`

/** `FAIL orders: PART_MISSING orders_….parquet: listed in the manifest but not at the destination`. */
export const renderFinding = (exportName: string, item: Finding): string =>
  `${item.severity === "error" ? "FAIL" : "WARN"} ${exportName}: ${item.code} ${item.object}: ${item.message}`.replace(
    CONTROL,
    "?"
  )

/**
 * The closing line of a clean export (`OK   orders: 3 parts, 120,000 rows verified`; with several kept runs
 * `OK   orders: 10 runs, 30 parts, 1,200,000 rows verified`), or undefined if it failed.
 */
export const renderVerdict = (validation: ExportValidation): string | undefined => {
  if (failures(validation).length > 0) return undefined
  const warned = warnings(validation).length
  const tail = warned > 0 ? ` (${plural(warned, "warning")})` : ""
  if (!validation.verifiable) return `SKIP ${validation.exportName}: nothing to validate${tail}`
  const runs = validation.runs > 1 ? `${plural(validation.runs, "run")}, ` : ""
  return `OK   ${validation.exportName}: ${runs}${plural(validation.parts, "part")}, ${plural(validation.rows, "row")} verified${tail}`
}

/**
 * The lines for one export: every finding (at most `maxUntracked` untracked objects, then a count of the rest —
 * after many runs into one directory, every earlier run's parts are untracked), then the verdict.
 */
export const renderValidation = (validation: ExportValidation, maxUntracked = Infinity): Array<string> => {
  const lines: Array<string> = []
  let untracked = 0
  for (const item of validation.findings) {
    if (item.code === "UNTRACKED_OBJECT" && item.severity === "warning" && ++untracked > maxUntracked) continue
    lines.push(renderFinding(validation.exportName, item))
  }
  if (untracked > maxUntracked) {
    lines.push(`WARN ${validation.exportName}: … and ${plural(untracked - maxUntracked, "more untracked object")} (rivet validate lists them all)`)
  }
  const verdict = renderVerdict(validation)
  if (verdict !== undefined) lines.push(verdict)
  return lines
}

/** An IntegrityError for an export whose validation found failures (exit code 3), or undefined. */
export const integrityErrorOf = (validation: ExportValidation): IntegrityError | undefined => {
  const failed = failures(validation)
  if (failed.length === 0) return undefined
  const codes = [...new Set(failed.map((item) => item.code))].join(", ")
  return new IntegrityError({
    message: `export '${validation.exportName}' failed validation at ${validation.uri}: ${plural(failed.length, "problem")} (${codes})`,
    hint: "each FAIL line names the object and what differs; docs/validate.md explains the codes"
  })
}

/** Every error a set of validations amounts to: integrity failures and the errors that stopped a check. */
export const validationErrors = (results: ReadonlyArray<ExportValidationResult>): Array<RivetError> =>
  results.flatMap((result) => {
    if (result._tag === "error") return [result.error]
    const error = integrityErrorOf(result.validation)
    return error ? [error] : []
  })

/** `3 exports validated: 1 ok, 1 failed, 1 not checked (2 failures, 1 warning)`. */
export const renderSummary = (results: ReadonlyArray<ExportValidationResult>): string => {
  const validations = results.flatMap((result) => (result._tag === "validated" ? [result.validation] : []))
  const failed = validations.filter((validation) => failures(validation).length > 0).length
  const unchecked = results.length - validations.length
  const failureCount = validations.reduce((sum, validation) => sum + failures(validation).length, 0)
  const warningCount = validations.reduce((sum, validation) => sum + warnings(validation).length, 0)
  const counts = [`${formatCount(validations.length - failed)} ok`, `${formatCount(failed)} failed`]
  if (unchecked > 0) counts.push(`${formatCount(unchecked)} not checked (error)`)
  return `${plural(results.length, "export")} validated: ${counts.join(", ")} (${plural(failureCount, "failure")}, ${plural(warningCount, "warning")})`
}

/** The `--json` report: one entry per export with its findings, or the error that stopped its check. */
export const jsonReport = (results: ReadonlyArray<ExportValidationResult>, strict: boolean) => {
  const errors = validationErrors(results)
  return {
    ok: errors.length === 0,
    strict,
    exports: results.map((result) =>
      result._tag === "validated"
        ? {
            export: result.validation.exportName,
            uri: result.validation.uri,
            status: failures(result.validation).length > 0 ? "failed" : result.validation.verifiable ? "ok" : "skipped",
            runs: result.validation.runs,
            parts: result.validation.parts,
            rows: result.validation.rows,
            findings: result.validation.findings
          }
        : {
            export: result.exportName,
            status: "error",
            error: {
              type: result.error._tag,
              message: result.error.message,
              hint: result.error.hint,
              exit_code: exitCodeOf(result.error)
            }
          }
    )
  }
}
