import * as Schema from "effect/Schema"

/**
 * Export keys the Rust rivet's `plan` command writes back into configs (`--annotate-waves`) or that only steer its
 * planning: scheduling advice for its `apply` command. Rivet runs the exports of a config one after another, in
 * order, so they change nothing here — but refusing them would make every planned Rust config fail. They are
 * decoded (a wrong type is still an error) and each one present is reported once as a notice.
 */
const WHAT = {
  wave: "the wave its apply command runs the export in",
  parallel_safe: "whether its apply command may run the export beside the others of its wave",
  source_group: "which exports share the capacity of one source",
  reconcile_required: "to plan the export as one whose counts are reconciled"
} as const

export type AdvisoryKey = keyof typeof WHAT

const described = (key: AdvisoryKey) =>
  `Accepted for configs of the Rust rivet, whose plan command writes it (${WHAT[key]}); no effect in Rivet, which runs exports in config order.`

/** The schemas of the advisory keys, spread into the export's own keys (ExportCore). */
export const ADVISORY_FIELDS = {
  wave: Schema.optional(
    Schema.Int.pipe(Schema.nonNegative()).annotations({
      description: described("wave"),
      message: () => ({ message: "must be a whole number of at least 0 (1 = the first wave)", override: true })
    })
  ),
  parallel_safe: Schema.optional(Schema.Boolean.annotations({ description: described("parallel_safe") })),
  source_group: Schema.optional(Schema.String.annotations({ description: described("source_group") })),
  reconcile_required: Schema.optional(Schema.Boolean.annotations({ description: described("reconcile_required") }))
}

const KEYS = Object.keys(WHAT) as ReadonlyArray<AdvisoryKey>

/** Something a config says that changes nothing, reported before an export is checked, planned or run. */
export interface ConfigNotice {
  /** The config path of the key, e.g. `exports[0].wave`. */
  readonly path: string
  readonly message: string
  /** `warning`: a key of the Rust rivet whose setting Rivet has no equivalent for (default: a note). */
  readonly severity?: "note" | "warning" | undefined
}

/** One notice per advisory key present on a decoded export (`path` is the export's, e.g. `exports[0]`). */
export const advisoryNotices = (exportKeys: Partial<Record<AdvisoryKey, unknown>>, path: string): ReadonlyArray<ConfigNotice> =>
  KEYS.filter((key) => exportKeys[key] !== undefined).map((key) => ({
    path: `${path}.${key}`,
    message: `has no effect in Rivet: it is scheduling advice of the Rust rivet's plan command (${WHAT[key]}); Rivet runs the exports of a config one after another, in order`
  }))
