/** What `rivet validate` can find wrong at a destination (docs/validate.md). */
export type FindingCode =
  | "MANIFEST_MISSING"
  | "MANIFEST_INVALID"
  | "SUCCESS_MISSING"
  | "SUCCESS_STALE"
  | "SUCCESS_MALFORMED"
  | "PART_MISSING"
  | "PART_SIZE_MISMATCH"
  | "PART_CHECKSUM_MISMATCH"
  | "PART_ROW_COUNT"
  | "PART_UNREADABLE"
  | "KEPT_MANIFEST_MISSING"
  | "KEPT_MANIFEST_MISMATCH"
  | "UNTRACKED_OBJECT"
  | "RUN_NOT_PUBLISHED"
  | "STALE_MARKER"
  | "NOT_VERIFIED"
  | "TABLE_UNREADABLE"
  | "TABLE_FILE_MISSING"
  | "TABLE_FILE_SIZE"
  | "TABLE_FILE_ROWS"

/**
 * `error` fails validation (exit 3); `warning` is reported only — unless `--strict`, which makes every warning an
 * error.
 */
export type Severity = "error" | "warning"

/** One problem found at a destination, naming the object it is about (a key relative to the destination). */
export interface Finding {
  readonly code: FindingCode
  readonly severity: Severity
  readonly object: string
  readonly message: string
}

/**
 * Codes that are warnings by default: an untracked object may be a part of a run from before manifests were kept
 * (or an extra copy: delivery is at-least-once); a kept run that did not publish lists complete parts; a marker of
 * the other layout misleads only its readers; and what could not be checked is not proven wrong.
 */
const WARNINGS: ReadonlySet<FindingCode> = new Set(["UNTRACKED_OBJECT", "RUN_NOT_PUBLISHED", "STALE_MARKER", "NOT_VERIFIED"])

export const finding = (code: FindingCode, object: string, message: string, strict: boolean): Finding => ({
  code,
  severity: strict || !WARNINGS.has(code) ? "error" : "warning",
  object,
  message
})

/** The validation of one export's destination. */
export interface ExportValidation {
  readonly exportName: string
  /** The destination root. */
  readonly uri: string
  /** False when the destination cannot be listed or read back (stdout): nothing was checked. */
  readonly verifiable: boolean
  /** Runs whose parts were checked: every kept run (or those asked for), else the run in the latest manifest. */
  readonly runs: number
  /** Distinct parts those runs' manifests list (0 when there is none). */
  readonly parts: number
  /** Rows those parts hold, as recorded in the manifests. */
  readonly rows: number
  readonly findings: ReadonlyArray<Finding>
}

export const failures = (validation: ExportValidation): ReadonlyArray<Finding> =>
  validation.findings.filter((item) => item.severity === "error")

export const warnings = (validation: ExportValidation): ReadonlyArray<Finding> =>
  validation.findings.filter((item) => item.severity === "warning")

/** `120000` → `120,000`. */
export const formatCount = (value: number): string => value.toLocaleString("en-US")
