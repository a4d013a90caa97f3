#!/usr/bin/env node
/**
 * The pipeline a user picks instead of Rivet, second half: a CSV written by `psql \copy … csv header` → one
 * Parquet file, zstd, with DuckDB (`@duckdb/node-api`, a devDependency used by the benchmarks only). DuckDB infers
 * the column types from the CSV text, so they are not PostgreSQL's: jsonb, arrays and uuid become strings, numeric
 * becomes double or a guessed decimal. Used by bench/run.sh, which times it with /usr/bin/time.
 *
 *   node bench/duckdb-csv-to-parquet.mjs IN.csv OUT.parquet     prints the number of rows written
 */
import console from "node:console"
import process from "node:process"
import { DuckDBInstance } from "@duckdb/node-api"

const [input, output] = process.argv.slice(2)
if (input === undefined || output === undefined) {
  console.error("usage: node bench/duckdb-csv-to-parquet.mjs IN.csv OUT.parquet")
  process.exit(2)
}
const literal = (text) => `'${text.replaceAll("'", "''")}'`

const instance = await DuckDBInstance.create(":memory:")
const connection = await instance.connect()
try {
  const result = await connection.runAndReadAll(
    `COPY (SELECT * FROM read_csv(${literal(input)}, header = true)) TO ${literal(output)} (FORMAT parquet, COMPRESSION zstd)`
  )
  console.log(String(result.getRows()[0]?.[0]))
} finally {
  connection.closeSync()
  instance.closeSync()
}
