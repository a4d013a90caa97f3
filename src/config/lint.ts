import { formatBytes } from "../core/size.js"
import type { ExportConfig, RivetConfig } from "./model.js"

/**
 * Something `rivet check` reports about a config that decodes: an `error` (a sure bug: the config must not run as
 * is), a `warning` (a likely mistake or risk) or a `note` (worth knowing; fine for small tables). Lints read the
 * config only — nothing connects — so they cannot know table sizes or column types.
 */
export interface LintFinding {
  readonly severity: "error" | "warning" | "note"
  readonly path: string
  readonly message: string
  readonly hint?: string | undefined
}

type Lint = (config: RivetConfig) => ReadonlyArray<LintFinding>

/** Above this, `batch_size` rows held at once (per parallel chunk) cost real memory for wide rows. */
export const LARGE_BATCH_SIZE = 100_000
/** Above this, `parallel` connections are more than most databases and destinations gain from. */
export const MANY_PARALLEL = 16
/** Below this, `max_file_size` was most likely meant in MiB: a plain number is bytes. */
export const SMALL_FILE_SIZE = 1024 ** 2

const at = (index: number, key?: string) => (key === undefined ? `exports[${index}]` : `exports[${index}].${key}`)

/** The export's modes that write one file per run unless `max_file_size` splits it. */
const writesOneFile = (spec: ExportConfig) => spec.mode.kind !== "chunked" && spec.mode.kind !== "keyset"

const perExport =
  (check: (spec: ExportConfig, index: number, config: RivetConfig) => ReadonlyArray<LintFinding>): Lint =>
  (config) =>
    config.exports.flatMap((spec, index) => check(spec, index, config))

const compressionOf = (spec: ExportConfig): unknown =>
  typeof spec.format.config === "object" && spec.format.config !== null
    ? (spec.format.config as Record<string, unknown>)["compression"]
    : undefined

export const gzipTextFormat: Lint = perExport((spec, index) => {
  const format = spec.format.plugin.type
  if ((format !== "csv" && format !== "ndjson") || compressionOf(spec) !== "gzip") return []
  if (!writesOneFile(spec) || spec.maxFileSize !== undefined) return []
  return [
    {
      severity: "warning",
      path: at(index, "compression"),
      message: `a gzip file cannot be split: query engines (Spark, Trino, DuckDB, …) read each .${format}.gz with one worker, and this export writes one file per run`,
      hint: "set max_file_size (e.g. 256MiB) to write several files that can be read in parallel, or use format: parquet (compressed and splittable)"
    }
  ]
})

export const fullTableInOneFile: Lint = perExport((spec, index) => {
  if (spec.mode.kind !== "full" || spec.table === undefined || spec.maxFileSize !== undefined) return []
  const table = spec.table.schema === undefined ? spec.table.name : `${spec.table.schema}.${spec.table.name}`
  return [
    {
      severity: "note",
      path: at(index, "table"),
      message: `mode: full writes all of '${table}' into one file per run; for a large table that is one very large file`,
      hint: "set max_file_size (e.g. 512MiB) to split it into parts, or use mode: chunked to read it in key ranges (optionally in parallel)"
    }
  ]
})

export const noCheckpoint: Lint = perExport((spec, index) => {
  if ((spec.mode.kind !== "chunked" && spec.mode.kind !== "keyset") || spec.mode.checkpoint) return []
  const unit = spec.mode.kind === "chunked" ? "chunk" : "page"
  return [
    {
      severity: "note",
      path: at(index, "mode"),
      message: `without chunk_checkpoint a failed ${spec.mode.kind} run starts over from the first ${unit}`,
      hint: `set chunk_checkpoint: true so that rivet run --resume redoes only the unfinished ${unit}s`
    }
  ]
})

export const largeBatch: Lint = perExport((spec, index) => {
  if (spec.batchSize <= LARGE_BATCH_SIZE) return []
  const parallel = spec.mode.kind === "chunked" ? spec.mode.parallel : 1
  const held = parallel > 1 ? `${spec.batchSize} rows × parallel ${parallel}` : `${spec.batchSize} rows`
  return [
    {
      severity: "warning",
      path: at(index, "batch_size"),
      message: `batch_size ${spec.batchSize} holds ${held} in memory at once; with wide rows (text, JSON) that is hundreds of MiB or more`,
      hint: `the default 10000 is usually as fast; stay at or below ${LARGE_BATCH_SIZE} unless you measured a gain`
    }
  ]
})

export const manyConnections: Lint = perExport((spec, index) => {
  if (spec.mode.kind !== "chunked" || spec.mode.parallel <= MANY_PARALLEL) return []
  return [
    {
      severity: "warning",
      path: at(index, "parallel"),
      message: `parallel: ${spec.mode.parallel} opens ${spec.mode.parallel} source connections at once (plus one for planning), each running a query`,
      hint: `check the database's max_connections and load; ${MANY_PARALLEL} or fewer is usually enough to keep a destination busy`
    }
  ]
})

export const tinyFiles: Lint = perExport((spec, index) => {
  if (spec.maxFileSize === undefined || spec.maxFileSize >= SMALL_FILE_SIZE) return []
  return [
    {
      severity: "warning",
      path: at(index, "max_file_size"),
      message: `max_file_size is ${formatBytes(spec.maxFileSize)}: every part is that small, so a large export writes thousands of files`,
      hint: "a plain number means bytes: write a unit, e.g. max_file_size: 256MiB"
    }
  ]
})

/**
 * Two exports on stdout: run together, their bytes are concatenated into one stream. (Exports sharing a directory
 * or prefix are checked when the config decodes: src/config/shared-destination.ts.)
 */
export const sharedStdout: Lint = (config) => {
  let first: number | undefined
  return config.exports.flatMap((spec, index): ReadonlyArray<LintFinding> => {
    if (spec.destination.plugin.type !== "stdout") return []
    if (first === undefined) {
      first = index
      return []
    }
    const other = config.exports[first]!.name
    return [
      {
        severity: "warning",
        path: at(index, "destination"),
        message: `exports '${other}' (exports[${first}]) and '${spec.name}' both write to stdout: run together, their bytes are concatenated into one stream`,
        hint: `run them one at a time with -e ${spec.name}, or give them separate destinations`
      }
    ]
  })
}

const LINTS: ReadonlyArray<Lint> = [
  sharedStdout,
  gzipTextFormat,
  tinyFiles,
  largeBatch,
  manyConnections,
  fullTableInOneFile,
  noCheckpoint
]

const RANK = { error: 0, warning: 1, note: 2 } as const

const exportIndex = (finding: LintFinding) => Number(/^exports\[(\d+)\]/.exec(finding.path)?.[1] ?? -1)

/** Every finding about a decoded config: errors first, then warnings, then notes; each group in config order. */
export const lintConfig = (config: RivetConfig): ReadonlyArray<LintFinding> =>
  LINTS.flatMap((lint) => lint(config))
    .map((finding, order) => ({ finding, order }))
    .sort(
      (a, b) =>
        RANK[a.finding.severity] - RANK[b.finding.severity] ||
        exportIndex(a.finding) - exportIndex(b.finding) ||
        a.order - b.order
    )
    .map(({ finding }) => finding)
