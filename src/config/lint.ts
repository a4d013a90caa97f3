import { formatBytes } from "../core/size.js"
import type { LintFinding } from "./finding.js"
import type { ExportConfig, RivetConfig } from "./model.js"

export type { LintFinding } from "./finding.js"

type Lint = (config: RivetConfig) => ReadonlyArray<LintFinding>

/** Above this, `batch_size` rows held at once (per parallel chunk) cost real memory for wide rows. */
export const LARGE_BATCH_SIZE = 100_000
/** Below this, `max_file_size` was most likely meant in MiB: a plain number is bytes. */
export const SMALL_FILE_SIZE = 1024 ** 2

const at = (index: number, key?: string) => (key === undefined ? `exports[${index}]` : `exports[${index}].${key}`)

/** The export's modes that write one file per run unless `max_file_size` splits it. */
const writesOneFile = (spec: ExportConfig) => !spec.mode.writesSeveralParts

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

export const largeBatch: Lint = perExport((spec, index) => {
  if (spec.batchSize <= LARGE_BATCH_SIZE) return []
  const parallel = spec.mode.parallel
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

/** What each export's mode finds about its own settings (`parallel`, `chunk_checkpoint`, a full table in one file). */
const modeLints: Lint = perExport((spec, index) =>
  spec.mode.lint({
    at: (key) => at(index, key),
    table: spec.table && (spec.table.schema === undefined ? spec.table.name : `${spec.table.schema}.${spec.table.name}`),
    maxFileSize: spec.maxFileSize
  })
)

/** A password written in the config file (`source.password`): it is read by everyone who can read the file. */
export const plaintextPassword: Lint = (config) => {
  const source = config.source.config
  if (typeof source !== "object" || source === null || (source as Record<string, unknown>)["password"] === undefined) return []
  return [
    {
      severity: "warning",
      path: "source.password",
      message: "the password is written in the config file (anyone who can read the file can read it)",
      hint: "use password_env: VAR (an environment variable) or password_file: path (a mounted secret) instead"
    }
  ]
}

const LINTS: ReadonlyArray<Lint> = [plaintextPassword, sharedStdout, gzipTextFormat, tinyFiles, largeBatch, modeLints]

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
