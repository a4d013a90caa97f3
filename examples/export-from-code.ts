/**
 * Running an export from TypeScript: the config is a plain object shaped like the YAML file, and the
 * result tells you exactly what landed (parts with rows, sizes and sha256, and the manifest).
 *
 *   DATABASE_URL=postgres://… npx tsx examples/export-from-code.ts
 */
import { runExports, sqliteStateLayer } from "rivet-export"

export const exportRecentOrders = async (databaseUrl: string, outputDir: string) => {
  const [orders] = await runExports({
    source: { type: "postgres", url: databaseUrl },
    exports: [
      {
        name: "recent_orders",
        query: "SELECT * FROM orders WHERE ordered_at > now() - interval '30 days'",
        format: "parquet",
        destination: { type: "local", path: outputDir }
      }
    ]
  }, {
    // A one-off full export needs no memory between runs: keep the run journal in memory instead of creating
    // .rivet_state.db in the current directory (incremental exports want the file, or RIVET_STATE_URL).
    state: sqliteStateLayer(":memory:")
  })
  return orders!
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await exportRecentOrders(process.env["DATABASE_URL"] ?? "postgres://localhost/shop", "./output/recent_orders")
  console.log(`${result.rows} rows in ${result.parts.length} file(s) under ${result.uri}`)
  for (const part of result.parts) console.log(`  ${part.path}  ${part.rows} rows  ${part.content_fingerprint}`)
}
