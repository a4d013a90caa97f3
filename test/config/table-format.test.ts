import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigValue as validateWith } from "../../src/registry/load-config.js"

const validateConfigValue = (...args: Parameters<typeof validateWith>) => Effect.provide(validateWith(...args), NodeFileSystem.layer)

const decode = (spec: Record<string, unknown>) =>
  validateConfigValue(
    {
      source: { type: "postgres", url: "postgres://postgres@127.0.0.1:1/none" },
      exports: [{ name: "orders", table: "shop.orders", destination: { type: "local", path: "lake" }, ...spec }]
    },
    "/tmp/rivet-table-format",
    "test.yaml"
  )

const problems = (spec: Record<string, unknown>) =>
  Effect.map(decode(spec), (result) => (Either.isLeft(result) ? result.left.map((error) => `${error.path}: ${error.message}`) : []))

describe("table_format", () => {
  it.effect("the short form is an Iceberg table in a file-system catalog, named after the export in the source's schema", () =>
    Effect.gen(function* () {
      const config = yield* decode({ table_format: "iceberg", partition_by: ["country"] })
      const spec = Either.getOrThrow(config).exports[0]!
      expect(spec.tableFormat).toEqual({
        type: "iceberg",
        catalog: { type: "filesystem" },
        namespace: "shop",
        name: "orders",
        properties: {},
        path: "exports[0].table_format"
      })
      // Identity partition columns stay in the data files, where Iceberg readers look for them.
      expect(spec.partition?.keepColumns).toBe(true)
    }))

  it.effect("the long form names the catalog, namespace, table and properties", () =>
    Effect.gen(function* () {
      const config = yield* decode({
        table_format: {
          type: "iceberg",
          catalog: { type: "sql", url_env: "ICEBERG_CATALOG_URL" },
          namespace: "lake",
          name: "orders_v2",
          properties: { "write.parquet.compression-codec": "zstd" }
        }
      })
      expect(Either.getOrThrow(config).exports[0]!.tableFormat).toMatchObject({
        catalog: { type: "sql", urlEnv: "ICEBERG_CATALOG_URL", name: "rivet" },
        namespace: "lake",
        name: "orders_v2",
        properties: { "write.parquet.compression-codec": "zstd" }
      })
    }))

  it.effect("refused with a non-Parquet format, on stdout and with partition_keep_columns: false — each naming its key", () =>
    Effect.gen(function* () {
      expect(yield* problems({ table_format: "iceberg", format: "csv" })).toEqual([
        "exports[0].format: table_format: iceberg writes Parquet data files, not csv"
      ])
      expect(yield* problems({ table_format: "iceberg", format: "ndjson", destination: { type: "stdout" } })).toContain(
        "exports[0].table_format: an Iceberg table needs a location: the stdout destination has none"
      )
      expect(yield* problems({ table_format: "iceberg", partition_by: ["country"], partition_keep_columns: false })).toEqual([
        "exports[0].partition_keep_columns: an Iceberg table keeps its partition columns inside the data files"
      ])
      expect(yield* problems({ table_format: "delta" })).toHaveLength(1)
      const sqlWithoutUrl = yield* problems({ table_format: { type: "iceberg", catalog: { type: "sql" } } })
      expect(sqlWithoutUrl.some((problem) => problem.startsWith("exports[0].table_format.catalog"))).toBe(true)
    }))
})
