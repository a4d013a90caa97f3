// Cells may hold database text (cursor values, paths); terminal control bytes must not reach the terminal.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/g

/**
 * Columns separated by two spaces, left-aligned unless `align` says "right" (numbers); the last column is not
 * padded, so lines carry no trailing blanks.
 */
export const renderTable = (
  headers: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  align: ReadonlyArray<"left" | "right"> = []
): string => {
  const clean = rows.map((row) => row.map((cell) => cell.replace(CONTROL, "?")))
  const widths = headers.map((header, i) => Math.max(header.length, ...clean.map((row) => (row[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells
      .map((cell, i) =>
        align[i] === "right" ? cell.padStart(widths[i] ?? 0) : i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)
      )
      .join("  ")
      .trimEnd()
  return [line(headers), ...clean.map(line)].join("\n")
}
