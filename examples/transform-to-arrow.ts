/**
 * A step of your own between PostgreSQL and the file: each order gets computed columns (and cancelled orders are
 * dropped) on its way to an Arrow IPC file written by the example format plugin in plugins/rivet-format-arrow —
 * ready for `pl.read_ipc(...)` (Polars), `pd.read_feather(...)` (pandas) or DuckDB's Arrow reader.
 *
 *   (cd plugins/rivet-format-arrow && npm ci && npm run build)
 *   npm run build && DATABASE_URL=postgres://… npx tsx examples/transform-to-arrow.ts
 */
import * as path from "node:path"
import { type LoadedPlugin, mapRows, runExports } from "rivet-export"

/**
 * Per row: `total_cents` (int64, computed exactly from the decimal text — no floating point) and a size `band`.
 * Returning null drops the row. The second argument declares the output columns from the source's.
 */
export const enrichOrders = mapRows(
  (row) => {
    if (row["status"] === "cancelled") return null
    const total = row["total"] as string | null // numeric(10,2) arrives as exact text, e.g. "12.30"
    const cents = total === null ? null : BigInt(total.replace(".", ""))
    return { ...row, total_cents: cents, band: cents === null ? null : cents >= 10_000n ? "large" : "small" }
  },
  (schema) => ({
    columns: [...schema.columns, { name: "total_cents", type: { kind: "int64" } }, { name: "band", type: { kind: "string" } }]
  })
)

/** Exports `table` to `{workDir}/orders/` as Arrow; relative paths and the run state live in `workDir`. */
export const exportOrdersToArrow = async (databaseUrl: string, workDir: string, table = "orders") => {
  // `plugins:` loads the Arrow format at run time; the type argument tells the config's type about `format: arrow`.
  const [orders] = await runExports<LoadedPlugin<"format", "arrow">>(
    {
      // A path is resolved against configDir; an installed plugin would be named by its npm package instead.
      plugins: [path.resolve(import.meta.dirname, "../plugins/rivet-format-arrow")],
      source: { type: "postgres", url: databaseUrl },
      exports: [{ name: "orders", table, format: "arrow", destination: { type: "local", path: "./orders" } }]
    },
    { configDir: workDir, transforms: { orders: enrichOrders } }
  )
  return orders!
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await exportOrdersToArrow(process.env["DATABASE_URL"] ?? "postgres://localhost/shop", "./output")
  console.log(`${result.rows} rows in ${result.parts.map((part) => part.path).join(", ")} under ${result.uri}`)
}
