import type { BatchSchema } from "../src/core/batch.js"

/** bench_2m's 20 columns (bench/make-table.sql) as Rivet types them, for the encode-only benchmarks. */
export const wideSchema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "customer_id", type: { kind: "int32" } },
    { name: "quantity", type: { kind: "int16" } },
    { name: "amount", type: { kind: "decimal", precision: 12, scale: 2 } },
    { name: "unit_price", type: { kind: "decimal", precision: 18, scale: 6 } },
    { name: "ratio", type: { kind: "float64" } },
    { name: "score", type: { kind: "float32" } },
    { name: "name", type: { kind: "string" } },
    { name: "email", type: { kind: "string" } },
    { name: "country", type: { kind: "string" } },
    { name: "status", type: { kind: "string" } },
    { name: "active", type: { kind: "bool" } },
    { name: "created_at", type: { kind: "timestamptz" } },
    { name: "updated_at", type: { kind: "timestamp" } },
    { name: "birth_date", type: { kind: "date" } },
    { name: "open_time", type: { kind: "time" } },
    { name: "uid", type: { kind: "uuid" } },
    { name: "payload", type: { kind: "json" } },
    { name: "tags", type: { kind: "list", element: { kind: "string" } } },
    { name: "note", type: { kind: "string" } }
  ]
}

/** The values make-table.sql cycles through for `country` and `status`. */
export const COUNTRIES = ["DE", "FR", "US", "GB", "JP", "BR", "IN", "NL"]
export const STATUSES = ["new", "paid", "shipped", "delivered", "returned"]
