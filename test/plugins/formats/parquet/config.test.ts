import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import {
  DEFAULT_ROW_GROUP_BYTES,
  DEFAULT_ROW_GROUP_ROWS,
  rowGroupLimits
} from "../../../../src/plugins/formats/parquet/config.js"
import parquet from "../../../../src/plugins/formats/parquet/index.js"
import { FormatDriver } from "../../../../src/core/plugin.js"

const decode = (input: unknown) => Schema.decodeUnknownEither(parquet.config)(input, { onExcessProperty: "error" })
const problem = (input: unknown): string =>
  Either.match(decode(input), {
    onLeft: (error) => ParseResult.TreeFormatter.formatErrorSync(error),
    onRight: () => "decoded"
  })

describe("parquet config", () => {
  it("defaults to zstd and to row groups bounded by rows and bytes; an explicit size is exact", () => {
    expect(decode({})).toEqual(Either.right({ compression: "zstd" }))
    expect(rowGroupLimits({ compression: "zstd" })).toEqual({ rows: DEFAULT_ROW_GROUP_ROWS, bytes: DEFAULT_ROW_GROUP_BYTES })
    expect(rowGroupLimits({ compression: "zstd", row_group_size: 500_000 })).toEqual({ rows: 500_000, bytes: Infinity })
    expect(decode({ compression: "gzip", compression_level: 0, row_group_size: 5 })).toEqual(
      Either.right({ compression: "gzip", compression_level: 0, row_group_size: 5 })
    )
    expect(Either.isRight(decode({ compression: "zstd", compression_level: 22 }))).toBe(true)
  })

  it("rejects levels out of range or for codecs without levels", () => {
    expect(problem({ compression: "zstd", compression_level: 23 })).toContain("use 1–22")
    expect(problem({ compression: "zstd", compression_level: 0 })).toContain("use 1–22")
    expect(problem({ compression_level: 30 })).toContain("out of range for zstd")
    expect(problem({ compression: "gzip", compression_level: 10 })).toContain("use 0–9")
    expect(problem({ compression: "snappy", compression_level: 1 })).toContain("not supported for compression 'snappy'")
    expect(problem({ compression: "none", compression_level: 1 })).toContain("not supported for compression 'none'")
    expect(problem({ compression: "zstd", compression_level: 2.5 })).not.toBe("decoded")
  })

  it("rejects unknown codecs, bad row group sizes and unknown keys", () => {
    expect(problem({ compression: "brotli" })).toContain(`compression must be one of zstd, snappy, gzip, lz4 or none; got "brotli"`)
    expect(problem({ compression: "lz4", compression_level: 3 })).toContain("compression_level is not supported for compression 'lz4'")
    expect(problem({ row_group_size: 0 })).not.toBe("decoded")
    expect(problem({ row_group_size: "10k" })).not.toBe("decoded")
    expect(problem({ row_groups: 5 })).toContain("row_groups")
  })

  it("exposes its keys (the runtime splits export keys by them) with descriptions", () => {
    const keys = SchemaAST.getPropertySignatures(SchemaAST.encodedAST(parquet.config.ast))
    expect(keys.map((key) => String(key.name)).sort()).toEqual(["compression", "compression_level", "row_group_size"])
    for (const key of keys) {
      expect(SchemaAST.getDescriptionAnnotation(key.type)._tag, String(key.name)).toBe("Some")
    }
  })

  it.effect("the driver reports what the config chose", () =>
    Effect.gen(function* () {
      for (const [compression, label] of [["zstd", "zstd"], ["gzip", "gzip"], ["snappy", "snappy"], ["none", "none"]]) {
        const config = Schema.decodeUnknownSync(parquet.config)({ compression })
        const driver = yield* Effect.provide(FormatDriver, parquet.make(config, { configDir: ".", env: {} }))
        expect(driver.compression).toBe(label)
        expect(driver.extension).toBe("parquet")
        expect(driver.contentType).toBe("application/vnd.apache.parquet")
      }
      expect(parquet.type).toBe("parquet")
      expect(parquet.kind).toBe("format")
    })
  )
})
