import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import type { ChunkSpec, PlannedExport } from "../engine/plan/model.js"
import { formatBytes } from "../core/size.js"
import { formatCount } from "./render.js"

// Terminal control bytes from a query or a database value must not reach the user's terminal; newlines stay.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f]/g

const chunkText = (column: string, spec: ChunkSpec | null): string =>
  spec === null ? "none" : "nulls" in spec ? `${column} IS NULL` : `${column} ${spec.low}..${spec.high}`

/** Lines this long at most (beyond the label) before the column list wraps. */
const COLUMNS_WIDTH = 80

/** `3: id int64, note string, …`, wrapped into lines of about COLUMNS_WIDTH characters. */
const columnsText = (columns: NonNullable<PlannedExport["columns"]>): string => {
  const lines = [`${columns.length}:`]
  for (const [index, column] of columns.entries()) {
    const item = `${column.name} ${column.type}${index < columns.length - 1 ? "," : ""}`
    const last = lines.length - 1
    if (lines[last]!.length + 1 + item.length > COLUMNS_WIDTH && index > 0) lines.push(item)
    else lines[last] = `${lines[last]} ${item}`
  }
  return lines.join("\n")
}

/** Label/value rows of one planned export; multi-line values are indented under their label. */
const rowsOf = (plan: PlannedExport): Array<[string, string]> => {
  const rows: Array<[string, string]> = [["mode", plan.mode], ["source", plan.source]]
  // A change log has no row estimate (its pending WAL below says how much there is to read); ANALYZE would not help.
  if (!plan.changes || plan.estimated_rows !== null) {
    rows.push(["estimated rows", plan.estimated_rows === null ? "unknown (no statistics: ANALYZE the table)" : `~${formatCount(plan.estimated_rows)}`])
  }
  if (plan.cursor) {
    const { column, after, until } = plan.cursor
    rows.push(["cursor", after === null ? `${column}: none stored, every row is read` : `${column} > ${after}`])
    if (until !== null) rows.push(["until", `${column} <= ${until} (cursor_lag)`])
  }
  if (plan.window) rows.push(["window", `${plan.window.column} from ${plan.window.from} to ${plan.window.to}`])
  if (plan.changes) {
    const { slot, publication, from, snapshot, slot_confirmed, current, pending_bytes } = plan.changes
    if (slot !== null) {
      rows.push(["slot", `${slot} (publication ${publication}): ${slot_confirmed === null ? "not created yet" : `confirmed at ${slot_confirmed}`}`])
    }
    const start =
      from !== null
        ? `after ${from}`
        : snapshot
          ? "first run: the table's snapshot, then the changes"
          : slot === null
            ? "first run: the changes from the log's end on"
            : slot_confirmed === null
              ? "first run: the changes from the slot's creation on"
              : `first run: the changes after the slot's position ${slot_confirmed}`
    rows.push(["changes", `${start}${current === null ? "" : ` up to ${current}`}`])
    if (pending_bytes !== null) rows.push(["pending WAL", formatBytes(pending_bytes)])
  }
  const [first] = plan.statements
  if (plan.chunks) {
    const { column, count, size } = plan.chunks
    rows.push(["chunks", `${formatCount(count)} on ${column}, ${formatCount(size)} key values each`])
    if (count > 0) rows.push(["first chunk", chunkText(column, plan.chunks.first)])
    if (count > 1) rows.push(["last chunk", chunkText(column, plan.chunks.last)])
  }
  if (plan.pages) {
    rows.push(["pages", `${formatCount(plan.pages.page_size)} rows each, by ${plan.pages.key_columns.join(", ")}`])
  }
  if (first !== undefined) {
    const label = plan.chunks ? "first statement" : plan.pages ? "first page" : "statement"
    rows.push([label, first])
  }
  if (plan.statements.length > 1) rows.push(["last statement", plan.statements.at(-1)!])
  if (plan.statements.length > 2) rows.push(["", `(${formatCount(plan.statements.length)} statements; --json lists every one)`])
  if (plan.columns) rows.push(["columns", columnsText(plan.columns)])
  if (plan.masks) rows.push(["masks", plan.masks.map(({ column, method }) => `${column} ${method}`).join(", ")])
  if (plan.partitions)
    rows.push([
      "partitions",
      `${plan.partitions.by.join(", ")}: ${plan.partitions.estimated === null ? "count unknown" : `~${formatCount(plan.partitions.estimated)} values of ${plan.partitions.estimate_covers.join(", ")}`}; at most ${plan.partitions.max_open} open at once`
    ])
  if (plan.table)
    rows.push([
      "table",
      `${plan.table.format} ${plan.table.name} (${plan.table.catalog}): ${plan.table.operation} on ${plan.table.current_snapshot === null ? "a new table" : `snapshot ${plan.table.current_snapshot}`}`
    ])
  rows.push(["destination", plan.destination], ["naming", plan.naming])
  for (const notice of plan.notices) rows.push(["note", notice])
  return rows
}

/** The human-readable plan of one export. */
export const renderPlannedExport = (plan: PlannedExport): string => {
  const rows = rowsOf(plan)
  const width = Math.max(...rows.map(([label]) => label.length)) + 2
  const header = `── ${plan.name} `.padEnd(60, "─")
  const lines = rows.map(([label, value]) => {
    const [head, ...rest] = value.replace(CONTROL, "").split("\n")
    const indent = " ".repeat(width + 2)
    return [`  ${(label === "" ? "" : `${label}:`).padEnd(width)}${head}`, ...rest.map((line) => `${indent}${line}`)].join("\n")
  })
  return [header.replace(CONTROL, ""), ...lines].join("\n")
}

/**
 * The statements each export ran (`rivet run --verbose`), to compare with its plan: a `statements` event per export
 * with `--json`, else numbered lines. Written to stderr, like the rest of a run's report.
 */
export const printStatements = (
  runs: ReadonlyArray<{ readonly exportName: string; readonly statements: ReadonlyArray<string> }>,
  json: boolean
) =>
  Effect.forEach(
    runs,
    (run) =>
      Console.error(
        json
          ? JSON.stringify({ event: "statements", time: new Date().toISOString(), export: run.exportName, statements: run.statements })
          : [`statements (${run.exportName}):`, ...run.statements.map((text, i) => `  ${i + 1}. ${text.replace(CONTROL, "").replaceAll("\n", "\n     ")}`)].join("\n")
      ),
    { discard: true }
  )
