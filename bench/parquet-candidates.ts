/**
 * Encoder-only comparison on batches shaped like bench_2m (bench/make-table.sql): the same typed batches
 * (ColumnData) go through
 *   hyparquet — Rivet's Parquet PartEncoder (hyparquet-writer fed from the column buffers)
 *   wasm      — parquet-wasm 0.8.0: apache-arrow Data built zero-copy over the buffers, one Arrow IPC stream per
 *               row group, Table.fromIPCStream + writeParquet (arrow-rs) per row group
 *
 *   npx esbuild bench/parquet-candidates.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=bench/.work/parquet-candidates.mjs
 *   node bench/.work/parquet-candidates.mjs <hyparquet|wasm> [rows=500000] [compression=zstd] [batch=10000]
 *
 * Batches are generated before timing starts (held in memory); prints encode wall and CPU seconds, output size,
 * and the process's peak RSS.
 */
import * as Arrow from "apache-arrow"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { makeCodec } from "../src/plugins/formats/parquet/compressors.js"
import { ParquetConfig, rowGroupLimits } from "../src/plugins/formats/parquet/config.js"
import { limbCount, parseDecimal } from "../src/plugins/formats/parquet/decimal.js"
import { makePartEncoder } from "../src/plugins/formats/parquet/encoder.js"
import { type Batch, type ColumnData, type LogicalType, makeBatch, type Value } from "../src/core/batch.js"
import { COUNTRIES, STATUSES, wideSchema } from "./wide-shape.js"

const [candidate = "hyparquet", rowsArg, compressionArg, batchArg] = process.argv.slice(2)
const totalRows = Number(rowsArg ?? 500_000)
const batchSize = Number(batchArg ?? 10_000)
const compression = compressionArg ?? "zstd"

const schema = wideSchema
const columns = schema.columns
const hex = (n: number) => (n >>> 0).toString(16).padStart(8, "0")

const valueOf = (column: number, i: number): Value => {
  switch (column) {
    case 0: return BigInt(i)
    case 1: return (i * 7919) % 100_000
    case 2: return i % 11 === 0 ? null : i % 500
    case 3: return (((i * 37) % 10_000_000) / 100).toFixed(2)
    case 4: return (((i * 7) % 1_000_000_007) / 1_000_000).toFixed(6)
    case 5: return (i % 1000) / 7
    case 6: return i % 13 === 0 ? null : Math.fround((i % 100) / 3)
    case 7: return `customer ${i}`
    case 8: return `user${i}@example.com`
    case 9: return COUNTRIES[i % 8]!
    case 10: return STATUSES[i % 5]!
    case 11: return i % 3 !== 0
    case 12: return 1_577_836_800_000_000n + BigInt(i) * 1_000_000n + BigInt(i % 1_000_000)
    case 13: return 1_622_548_800_000_000n + BigInt(i) * 17_000_000n
    case 14: return i % 9 === 0 ? null : -7305 + (i % 20_000)
    case 15: return BigInt(i % 86_400) * 1_000_000n
    case 16: {
      const h = hex(i * 2654435761) + hex(i * 40503) + hex(i) + hex(i * 69069)
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
    }
    case 17: return `{"id": ${i}, "big": ${12345678901234567890n + BigInt(i)}, "kind": "event"}`
    case 18: return [`tag${i % 10}`, `tag${i % 7}`]
    default: return i % 5 === 0 ? null : `note with, comma and "quotes" #${i}`
  }
}

const makeRows = (start: number, count: number): Batch =>
  makeBatch(schema, columns.map((_, c) => Array.from({ length: count }, (_, r) => valueOf(c, start + r))))

// ---- candidate (b): Arrow Data over the column buffers ----

const arrowType = (type: LogicalType): Arrow.DataType => {
  switch (type.kind) {
    case "int16": return new Arrow.Int16()
    case "int32": return new Arrow.Int32()
    case "int64": return new Arrow.Int64()
    case "float32": return new Arrow.Float32()
    case "float64": return new Arrow.Float64()
    case "bool": return new Arrow.Bool()
    case "date": return new Arrow.DateDay()
    case "time": return new Arrow.TimeMicrosecond()
    case "timestamp": return new Arrow.TimestampMicrosecond()
    case "timestamptz": return new Arrow.TimestampMicrosecond("UTC")
    case "uuid": return new Arrow.FixedSizeBinary(16)
    case "bytes": return new Arrow.Binary()
    case "decimal": return new Arrow.Decimal(type.scale, type.precision, type.precision > 38 ? 256 : 128)
    case "list": return new Arrow.List(new Arrow.Field("element", arrowType(type.element), true))
    default: return new Arrow.Utf8()
  }
}

const arrowData = (data: ColumnData, type: LogicalType): Arrow.Data => {
  const base = { type: arrowType(type), length: data.length, nullCount: data.nullCount, nullBitmap: data.validity }
  switch (data.layout) {
    case "binary": {
      if (type.kind === "decimal") {
        const limbs = type.precision > 38 ? 8 : limbCount(16)
        const out = new Uint32Array(data.length * limbs)
        for (let r = 0; r < data.length; r++) {
          const s = data.offsets[r]!
          const e = data.offsets[r + 1]!
          if (e > s) parseDecimal(data.data, s, e, type.precision, type.scale, out, r * limbs, limbs)
        }
        return Arrow.makeData({ ...base, type: arrowType(type) as Arrow.Decimal, data: out })
      }
      return Arrow.makeData({ ...base, type: arrowType(type) as Arrow.Utf8, valueOffsets: data.offsets, data: data.data })
    }
    case "fixed":
      return Arrow.makeData({ ...base, type: arrowType(type) as Arrow.FixedSizeBinary, data: data.data })
    case "list": {
      const element = (type as Extract<LogicalType, { kind: "list" }>).element
      return Arrow.makeData({ ...base, type: arrowType(type) as Arrow.List, valueOffsets: data.offsets, child: arrowData(data.child, element) })
    }
    case "bool":
      return Arrow.makeData({ ...base, type: new Arrow.Bool(), data: data.values })
    default:
      return Arrow.makeData({ ...base, type: arrowType(type) as Arrow.Int32, data: data.values as Int32Array })
  }
}

const arrowSchema = new Arrow.Schema(columns.map((c) => new Arrow.Field(c.name, arrowType(c.type), true)))

const toRecordBatch = (batch: Batch): Arrow.RecordBatch =>
  new Arrow.RecordBatch(
    arrowSchema,
    Arrow.makeData({
      type: new Arrow.Struct(arrowSchema.fields),
      length: batch.rowCount,
      nullCount: 0,
      children: batch.columns.map((data, c) => arrowData(data, columns[c]!.type))
    })
  )

const runWasm = async (batches: ReadonlyArray<Batch>, groupRows: number) => {
  const loadStart = process.hrtime.bigint()
  const wasm = await import("parquet-wasm")
  const props = () =>
    new wasm.WriterPropertiesBuilder()
      .setCompression(
        compression === "zstd" ? wasm.Compression.ZSTD : compression === "snappy" ? wasm.Compression.SNAPPY : compression === "gzip" ? wasm.Compression.GZIP : wasm.Compression.UNCOMPRESSED
      )
      .setMaxRowGroupSize(groupRows)
      .setColumnStatisticsEnabled("payload", wasm.EnabledStatistics.None)
      .setCreatedBy("rivet")
      .build()
  // Force instantiation (the node build instantiates at import).
  props().free()
  const loadMs = Number(process.hrtime.bigint() - loadStart) / 1e6
  let bytes = 0
  let pending: Array<Arrow.RecordBatch> = []
  let pendingRows = 0
  const flush = () => {
    const ipc = Arrow.tableToIPC(new Arrow.Table(pending), "stream")
    const table = wasm.Table.fromIPCStream(ipc)
    const out = wasm.writeParquet(table, props())
    bytes += out.byteLength
    pending = []
    pendingRows = 0
  }
  for (const batch of batches) {
    pending.push(toRecordBatch(batch))
    pendingRows += batch.rowCount
    if (pendingRows >= groupRows) flush()
  }
  if (pendingRows > 0) flush()
  return { bytes, loadMs }
}

const runHyparquet = (batches: ReadonlyArray<Batch>) =>
  Effect.runPromise(Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(ParquetConfig)({ compression })
    const limits = rowGroupLimits(config)
    const encoder = makePartEncoder(schema, { codec: yield* makeCodec(config), rowGroupSize: limits.rows, rowGroupBytes: limits.bytes })
    let bytes = 0
    for (const batch of batches) for (const chunk of yield* encoder.write(batch)) bytes += chunk.byteLength
    for (const chunk of yield* encoder.finish) bytes += chunk.byteLength
    return { bytes, loadMs: 0 }
  }))

const main = async () => {
  const batches: Array<Batch> = []
  for (let start = 0; start < totalRows; start += batchSize) batches.push(makeRows(start, Math.min(batchSize, totalRows - start)))
  const rssBefore = process.resourceUsage().maxRSS / 1024
  const began = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  const groupRows = Number(process.env["GROUP_ROWS"] ?? 100_000)
  const { bytes, loadMs } = candidate === "wasm" ? await runWasm(batches, groupRows) : await runHyparquet(batches)
  const used = process.cpuUsage(cpu)
  const seconds = Number(process.hrtime.bigint() - began) / 1e9
  console.log(
    `${candidate} rows=${totalRows} compression=${compression} wall=${seconds.toFixed(2)}s ` +
      `cpu=${((used.user + used.system) / 1e6).toFixed(2)}s load=${loadMs.toFixed(0)}ms ` +
      `output=${(bytes / 2 ** 20).toFixed(1)}MiB rss_after_generate=${rssBefore.toFixed(0)}MiB peak_rss=${(process.resourceUsage().maxRSS / 1024).toFixed(0)}MiB`
  )
}

main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
