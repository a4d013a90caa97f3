import * as YAML from "yaml"
import type { DiscoveredColumn, DiscoveredTable, Discovery } from "../../core/discovery/model.js"

/** Tables above this many estimated rows are split (chunked / keyset) rather than read in one statement. */
export const LARGE_TABLE_ROWS = 100_000
/** Chunked tables above this many rows read two chunks at a time. */
export const PARALLEL_TABLE_ROWS = 5_000_000
const CHUNK_SIZE = 100_000
const NO_KEY_MAX_FILE_SIZE = "256MiB"

const UPDATED_AT_NAMES = [
  "updatedat", "modifiedat", "lastmodified", "lastmodifiedat", "changedat", "lastchangedat", "lastupdated",
  "lastupdatedat", "lastupdate", "updated", "modified", "changed", "updatedon", "modifiedon", "updatetime",
  "updatedtime", "modifiedtime", "datemodified", "dateupdated", "mtime"
]

/** A comment (one string per line) placed before the node at `path` in the generated document. */
export interface PathComment {
  readonly path: ReadonlyArray<string | number>
  readonly lines: ReadonlyArray<string>
}

/** The config to write: its value, the comments to attach, and which maps to write in flow style. */
export interface InitDocument {
  readonly header: ReadonlyArray<string>
  readonly value: { readonly source: Record<string, unknown>; readonly exports: ReadonlyArray<Record<string, unknown>> }
  readonly comments: ReadonlyArray<PathComment>
  readonly flow: ReadonlyArray<ReadonlyArray<string | number>>
  /** Per export: its name, chosen mode and number of `# REVIEW:` notes (for the command's summary). */
  readonly summary: ReadonlyArray<{ readonly name: string; readonly mode: string; readonly reviews: number }>
}

export interface InitOptions {
  /** Name of the environment variable holding the connection URL (written as `url_env`, never its value). */
  readonly urlEnv: string
  /** The file name the user will run, for the header's "next steps". */
  readonly fileName: string
  readonly generatedAt: Date
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/

/** `${VAR}` is substituted in every config value; `$$` keeps a database name's `$` literal. */
const literal = (text: string): string => text.replace(/\$/g, "$$$$")

/** A value as it would appear in YAML (quoted when needed), for commented-out config lines. */
const yamlScalar = (value: unknown): string => YAML.stringify(value, { lineWidth: 0, flowCollectionPadding: false }).trimEnd()

type Quote = (name: string) => string

/** PostgreSQL's identifier quoting: the default when the discovery names no dialect of its own. */
const doubleQuoted: Quote = (name) => `"${name.replace(/"/g, '""')}"`
const qualified = (table: DiscoveredTable, quote: Quote): string => `${quote(table.schema)}.${quote(table.name)}`

const count = (value: number): string => Math.round(value).toLocaleString("en-US")

/** Wraps prose to comment lines of about `width` characters. */
const wrap = (text: string, width = 108): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(" ")) {
    if (line.length > 0 && line.length + 1 + word.length > width) {
      lines.push(line)
      line = word
    } else line = line.length === 0 ? word : `${line} ${word}`
  }
  if (line.length > 0) lines.push(line)
  return lines
}

const cleanName = (text: string): string =>
  text.replace(/[^A-Za-z0-9_.-]+/g, " ").trim().replace(/ +/g, "_").replace(/\.{2,}/g, ".").replace(/^[^A-Za-z0-9]+/, "")

/**
 * Export names (letters, digits, `_ - .`), unique. Tables whose name is already valid keep it; the others get a
 * cleaned name, prefixed with the schema or numbered when that is taken.
 */
const exportNames = (tables: ReadonlyArray<DiscoveredTable>): Array<string> => {
  const taken = new Set<string>()
  const names: Array<string | undefined> = tables.map(() => undefined)
  const assign = (index: number) => {
    const table = tables[index]!
    const base = cleanName(table.name) || "table"
    let name = [base, cleanName(`${table.schema}_${table.name}`) || base].find((candidate) => !taken.has(candidate))
    for (let n = 2; name === undefined; n++) if (!taken.has(`${base}_${n}`)) name = `${base}_${n}`
    taken.add(name)
    names[index] = name
  }
  tables.forEach((table, index) => cleanName(table.name) === table.name && assign(index))
  tables.forEach((_, index) => names[index] === undefined && assign(index))
  return names.map((name) => name!)
}

// decimal(p,0) too (MySQL's bigint unsigned): chunked mode splits it like any integer key.
const isInteger = (column: DiscoveredColumn | undefined): boolean =>
  column?.type?.kind === "int16" ||
  column?.type?.kind === "int32" ||
  column?.type?.kind === "int64" ||
  (column?.type?.kind === "decimal" && column.type.scale === 0)

/** The timestamp column that most looks like a last-modified time, if any. */
export const updatedAtColumn = (table: DiscoveredTable): DiscoveredColumn | undefined => {
  const candidates = table.columns.filter((c) => c.type?.kind === "timestamp" || c.type?.kind === "timestamptz")
  let best: { column: DiscoveredColumn; rank: number } | undefined
  for (const column of candidates) {
    const rank = UPDATED_AT_NAMES.indexOf(column.name.toLowerCase().replace(/[^a-z0-9]/g, ""))
    if (rank >= 0 && (best === undefined || rank < best.rank)) best = { column, rank }
  }
  return best?.column
}

const describeTable = (table: DiscoveredTable): string => {
  const how = { statistics: "estimated from statistics", count: "counted", planner: "planner estimate, never analyzed" }
  const key = table.primaryKey
    .map((name) => {
      const column = table.columns.find((c) => c.name === name)
      return `${name} (${column?.sourceType ?? "?"})`
    })
    .join(", ")
  return `${table.schema}.${table.name}: ~${count(table.estimatedRows)} rows (${how[table.estimateSource]}), ${
    key === "" ? "no primary key" : `primary key ${key}`
  }.`
}

interface ModeChoice {
  readonly fields: Record<string, unknown>
  readonly note: string
}

const chooseMode = (table: DiscoveredTable): ModeChoice => {
  const rows = table.estimatedRows
  const key = table.primaryKey
  if (rows <= LARGE_TABLE_ROWS) {
    return { fields: { mode: "full" }, note: `At most ~${count(LARGE_TABLE_ROWS)} rows: one read of every row per run.` }
  }
  if (key.length === 1 && isInteger(table.columns.find((c) => c.name === key[0]))) {
    const parallel = rows > PARALLEL_TABLE_ROWS
    return {
      fields: {
        mode: "chunked",
        chunk_column: literal(key[0]!),
        chunk_size: CHUNK_SIZE,
        ...(parallel ? { parallel: 2 } : {}),
        chunk_checkpoint: true
      },
      note:
        `Over ${count(LARGE_TABLE_ROWS)} rows with an integer primary key: read in ${key[0]} ranges of ${count(CHUNK_SIZE)}` +
        `${parallel ? `, two at a time (over ${count(PARALLEL_TABLE_ROWS)} rows)` : ""}, each its own short statement; ` +
        "a failed run continues with rivet run --resume."
    }
  }
  if (key.length > 0) {
    return {
      fields: { mode: "keyset", key_columns: key.map(literal), chunk_checkpoint: true },
      note:
        `Over ${count(LARGE_TABLE_ROWS)} rows and the primary key is not a single integer: read in pages ordered by ` +
        "the key, each its own short statement; a failed run continues with rivet run --resume."
    }
  }
  return {
    fields: { mode: "full", max_file_size: NO_KEY_MAX_FILE_SIZE },
    note:
      `Over ${count(LARGE_TABLE_ROWS)} rows but no primary key to split on: one read of every row, written in parts ` +
      "of at most 256 MiB. With a primary key (or a unique NOT NULL key as key_columns) mode: keyset could read it " +
      "in resumable pages."
  }
}

const incrementalHint = (column: DiscoveredColumn): Array<string> => [
  ...wrap(
    `${column.name} looks like a last-modified time. To export only new and changed rows on each run (deleted rows ` +
      "are not seen that way), replace the mode settings with:"
  ),
  "  mode: incremental",
  `  cursor_column: ${yamlScalar(literal(column.name))}`,
  "  cursor_lag: 5m"
]

const reviewLines = (table: DiscoveredTable, column: DiscoveredColumn, quote: Quote): Array<string> => {
  const problem = column.problem!
  if (problem.kind === "precision") {
    return [
      ...wrap(
        `REVIEW: ${column.name}: ${problem.reason}, so without this override the export stops. ` +
          `${problem.override} keeps up to 29 integer and 9 fractional digits; a value with more fractional digits ` +
          "(or NaN) stops the export too, as Rivet never rounds." +
          (problem.check === undefined ? "" : " Check the data and adjust:")
      ),
      ...(problem.check === undefined ? [] : [`  ${problem.check}`])
    ]
  }
  const kept = table.columns.filter((c) => c.problem?.kind !== "type")
  return [
    ...wrap(
      `REVIEW: ${column.name} is ${column.sourceType}: ${problem.reason}. It is exported as the source's ${problem.override === "bytes" ? "stored bytes" : "text form"} ` +
        `(${problem.override}).` +
        (kept.length > 0 ? " To convert it or leave it out, replace table: with a query, e.g.:" : "")
    ),
    ...(kept.length > 0
      ? [`  query: ${yamlScalar(literal(`SELECT ${kept.map((c) => quote(c.name)).join(", ")} FROM ${qualified(table, quote)}`))}`]
      : [])
  ]
}

/** Builds the commented config for the discovered tables: one export per table, mode chosen by size and key. */
export const planInit = (discovery: Discovery, options: InitOptions): InitDocument => {
  const quote = discovery.quoteIdentifier ?? doubleQuoted
  const defaultSchema = discovery.defaultSchema ?? "public"
  const comments: Array<PathComment> = []
  const flow: Array<ReadonlyArray<string | number>> = []
  const summary: Array<InitDocument["summary"][number]> = []
  const names = exportNames(discovery.tables)
  const exports = discovery.tables.map((table, index) => {
    const name = names[index]!
    const path = ["exports", index] as const
    const plain = PLAIN_IDENTIFIER.test(table.schema) && PLAIN_IDENTIFIER.test(table.name)
    const reference = plain
      ? { table: literal(table.schema === defaultSchema ? table.name : `${table.schema}.${table.name}`) }
      : { query: literal(`SELECT * FROM ${qualified(table, quote)}`) }
    const mode = chooseMode(table)
    const problems = table.columns.filter((column) => column.problem !== undefined)
    const updatedAt = updatedAtColumn(table)
    comments.push({ path, lines: [describeTable(table)] })
    comments.push({ path: [...path, "mode"], lines: [...wrap(mode.note), ...(updatedAt ? incrementalHint(updatedAt) : [])] })
    for (const column of problems) comments.push({ path: [...path, "columns", column.name], lines: reviewLines(table, column, quote) })
    flow.push([...path, "destination"])
    if (Array.isArray(mode.fields["key_columns"])) flow.push([...path, "key_columns"])
    summary.push({ name, mode: String(mode.fields["mode"]), reviews: problems.length })
    return {
      name,
      ...reference,
      ...mode.fields,
      ...(problems.length > 0
        ? { columns: Object.fromEntries(problems.map((column) => [column.name, { type: column.problem!.override }])) }
        : {}),
      format: "parquet",
      destination: { type: "local", path: `./output/${name}` }
    }
  })
  const skipped = discovery.skipped.map((table) => `  ${table.schema}.${table.name}: ${table.reason}`)
  const header = [
    "yaml-language-server: $schema=./rivet.schema.json",
    "(editor completion and checks: write the schema beside this file with  rivet schema > rivet.schema.json)",
    "",
    `Generated by rivet init on ${options.generatedAt.toISOString().replace(/\.\d+Z$/, "Z")} from ${discovery.displaySource}.`,
    "Read the comments (lines marked REVIEW: first), then:",
    `  rivet check -c ${options.fileName}`,
    `  rivet run -c ${options.fileName}`,
    ...(skipped.length > 0 ? ["", "Tables left out:", ...skipped] : [])
  ]
  return {
    header,
    value: { source: { type: discovery.sourceType, url_env: options.urlEnv }, exports },
    comments,
    flow,
    summary
  }
}
