import type { ByteBuffer } from "./bytes.js"
import { ThriftWriter } from "./thrift.js"

/**
 * The parts of Parquet's Thrift metadata (parquet.thrift) Rivet writes, named as parquet.thrift names them, and
 * their serialization: page headers and the footer (FileMetaData).
 */

export type PhysicalType = "BOOLEAN" | "INT32" | "INT64" | "FLOAT" | "DOUBLE" | "BYTE_ARRAY" | "FIXED_LEN_BYTE_ARRAY"
export type Repetition = "REQUIRED" | "OPTIONAL" | "REPEATED"
export type ConvertedType =
  | "UTF8"
  | "LIST"
  | "DECIMAL"
  | "DATE"
  | "TIME_MICROS"
  | "TIMESTAMP_MICROS"
  | "INT_8"
  | "INT_16"
  | "INT_32"
  | "INT_64"
  | "JSON"
export type TimeUnit = "MILLIS" | "MICROS" | "NANOS"
export type LogicalAnnotation =
  | { readonly type: "STRING" | "LIST" | "DATE" | "JSON" | "UUID" | "ENUM" }
  | { readonly type: "DECIMAL"; readonly precision: number; readonly scale: number }
  | { readonly type: "TIME" | "TIMESTAMP"; readonly isAdjustedToUTC: boolean; readonly unit: TimeUnit }
  | { readonly type: "INTEGER"; readonly bitWidth: 8 | 16 | 32 | 64; readonly isSigned: boolean }

/** A node of the schema tree, depth first; fields absent when parquet.thrift leaves them unset. */
export interface SchemaElement {
  readonly name: string
  readonly type?: PhysicalType
  readonly type_length?: number
  readonly repetition_type?: Repetition
  readonly num_children?: number
  readonly converted_type?: ConvertedType
  readonly scale?: number
  readonly precision?: number
  readonly logical_type?: LogicalAnnotation
  readonly field_id?: number
}

export type Codec = "UNCOMPRESSED" | "SNAPPY" | "GZIP" | "ZSTD" | "LZ4_RAW"
export type Encoding = "PLAIN" | "RLE" | "RLE_DICTIONARY"

export interface Statistics {
  readonly nullCount: number
  /** Min and max as the physical type's plain bytes; absent when the chunk has no comparable value. */
  readonly min?: Uint8Array
  readonly max?: Uint8Array
  readonly minExact?: boolean
  readonly maxExact?: boolean
}

export interface ColumnChunkMeta {
  readonly type: PhysicalType
  readonly encodings: ReadonlyArray<Encoding>
  readonly path: ReadonlyArray<string>
  readonly codec: Codec
  readonly numValues: number
  readonly uncompressedSize: number
  readonly compressedSize: number
  readonly dataPageOffset: number
  readonly dictionaryPageOffset?: number
  readonly statistics?: Statistics
}

export interface RowGroupMeta {
  readonly columns: ReadonlyArray<ColumnChunkMeta>
  readonly numRows: number
  readonly fileOffset: number
}

export interface KeyValue {
  readonly key: string
  readonly value: string
}

export interface FileMeta {
  readonly schema: ReadonlyArray<SchemaElement>
  readonly numRows: number
  readonly rowGroups: ReadonlyArray<RowGroupMeta>
  readonly keyValues: ReadonlyArray<KeyValue>
  readonly createdBy: string
}

const PHYSICAL: Record<PhysicalType, number> = {
  BOOLEAN: 0,
  INT32: 1,
  INT64: 2,
  FLOAT: 4,
  DOUBLE: 5,
  BYTE_ARRAY: 6,
  FIXED_LEN_BYTE_ARRAY: 7
}
const REPETITION: Record<Repetition, number> = { REQUIRED: 0, OPTIONAL: 1, REPEATED: 2 }
const CONVERTED: Record<ConvertedType, number> = {
  UTF8: 0,
  LIST: 3,
  DECIMAL: 5,
  DATE: 6,
  TIME_MICROS: 8,
  TIMESTAMP_MICROS: 10,
  INT_8: 15,
  INT_16: 16,
  INT_32: 17,
  INT_64: 18,
  JSON: 19
}
const CODEC: Record<Codec, number> = { UNCOMPRESSED: 0, SNAPPY: 1, GZIP: 2, ZSTD: 6, LZ4_RAW: 7 }
const ENCODING: Record<Encoding, number> = { PLAIN: 0, RLE: 3, RLE_DICTIONARY: 8 }
const PAGE_TYPE = { DATA_PAGE: 0, DICTIONARY_PAGE: 2 } as const

// LogicalType is a Thrift union: the field id says which member is set.
/** TimeUnit is a thrift union: the field set names the unit. */
const TIME_UNIT_FIELD: Record<TimeUnit, number> = { MILLIS: 1, MICROS: 2, NANOS: 3 }
const LOGICAL_FIELD = { STRING: 1, LIST: 3, ENUM: 4, DECIMAL: 5, DATE: 6, TIME: 7, TIMESTAMP: 8, INTEGER: 10, JSON: 12, UUID: 14 } as const

const writeLogical = (thrift: ThriftWriter, logical: LogicalAnnotation): void => {
  thrift.struct(LOGICAL_FIELD[logical.type], () => {
    switch (logical.type) {
      case "DECIMAL":
        thrift.i32(1, logical.scale)
        thrift.i32(2, logical.precision)
        break
      case "TIME":
      case "TIMESTAMP":
        thrift.bool(1, logical.isAdjustedToUTC)
        thrift.struct(2, () => thrift.struct(TIME_UNIT_FIELD[logical.unit], () => undefined))
        break
      case "INTEGER":
        thrift.i8(1, logical.bitWidth)
        thrift.bool(2, logical.isSigned)
        break
      default:
        break
    }
  })
}

const writeSchemaElement = (thrift: ThriftWriter, element: SchemaElement): void => {
  if (element.type !== undefined) thrift.i32(1, PHYSICAL[element.type])
  if (element.type_length !== undefined) thrift.i32(2, element.type_length)
  if (element.repetition_type !== undefined) thrift.i32(3, REPETITION[element.repetition_type])
  thrift.string(4, element.name)
  if (element.num_children !== undefined) thrift.i32(5, element.num_children)
  if (element.converted_type !== undefined) thrift.i32(6, CONVERTED[element.converted_type])
  if (element.scale !== undefined) thrift.i32(7, element.scale)
  if (element.precision !== undefined) thrift.i32(8, element.precision)
  if (element.field_id !== undefined) thrift.i32(9, element.field_id)
  if (element.logical_type !== undefined) thrift.struct(10, () => writeLogical(thrift, element.logical_type!))
}

const writeStatistics = (thrift: ThriftWriter, statistics: Statistics): void => {
  thrift.i64(3, statistics.nullCount)
  if (statistics.max !== undefined) thrift.binary(5, statistics.max)
  if (statistics.min !== undefined) thrift.binary(6, statistics.min)
  if (statistics.maxExact !== undefined) thrift.bool(7, statistics.maxExact)
  if (statistics.minExact !== undefined) thrift.bool(8, statistics.minExact)
}

const writeColumnChunk = (thrift: ThriftWriter, chunk: ColumnChunkMeta): void => {
  // file_offset is deprecated but required; like other writers, the offset where the chunk starts.
  thrift.i64(2, chunk.dictionaryPageOffset ?? chunk.dataPageOffset)
  thrift.struct(3, () => {
    thrift.i32(1, PHYSICAL[chunk.type])
    thrift.i32List(2, chunk.encodings.map((encoding) => ENCODING[encoding]))
    thrift.stringList(3, chunk.path)
    thrift.i32(4, CODEC[chunk.codec])
    thrift.i64(5, chunk.numValues)
    thrift.i64(6, chunk.uncompressedSize)
    thrift.i64(7, chunk.compressedSize)
    thrift.i64(9, chunk.dataPageOffset)
    if (chunk.dictionaryPageOffset !== undefined) thrift.i64(11, chunk.dictionaryPageOffset)
    if (chunk.statistics !== undefined) thrift.struct(12, () => writeStatistics(thrift, chunk.statistics!))
  })
}

/** The footer's FileMetaData (version 2: the format of today's readers). */
export const writeFileMeta = (out: ByteBuffer, meta: FileMeta): void => {
  const thrift = new ThriftWriter(out)
  thrift.structBody(() => {
    thrift.i32(1, 2)
    thrift.structList(2, meta.schema, (element) => writeSchemaElement(thrift, element))
    thrift.i64(3, meta.numRows)
    thrift.structList(4, meta.rowGroups, (group) => {
      thrift.structList(1, group.columns, (chunk) => writeColumnChunk(thrift, chunk))
      thrift.i64(2, group.columns.reduce((sum, chunk) => sum + chunk.uncompressedSize, 0))
      thrift.i64(3, group.numRows)
      thrift.i64(5, group.fileOffset)
      thrift.i64(6, group.columns.reduce((sum, chunk) => sum + chunk.compressedSize, 0))
    })
    if (meta.keyValues.length > 0) {
      thrift.structList(5, meta.keyValues, (entry) => {
        thrift.string(1, entry.key)
        thrift.string(2, entry.value)
      })
    }
    thrift.string(6, meta.createdBy)
    // TYPE_ORDER for every leaf: min_value/max_value are ordered as the logical type orders them.
    const leaves = meta.schema.filter((element) => element.type !== undefined)
    thrift.structList(7, leaves, () => thrift.struct(1, () => undefined))
  })
}

interface PageSizes {
  readonly uncompressedSize: number
  readonly compressedSize: number
  readonly numValues: number
}

export interface DataPageHeader extends PageSizes {
  readonly encoding: Encoding
}

const writePageHeader = (out: ByteBuffer, type: number, sizes: PageSizes, header: (thrift: ThriftWriter) => void): void => {
  const thrift = new ThriftWriter(out)
  thrift.structBody(() => {
    thrift.i32(1, type)
    thrift.i32(2, sizes.uncompressedSize)
    thrift.i32(3, sizes.compressedSize)
    header(thrift)
  })
}

/** The header of a DATA_PAGE (v1: levels and values compressed together). */
export const writeDataPageHeader = (out: ByteBuffer, header: DataPageHeader): void =>
  writePageHeader(out, PAGE_TYPE.DATA_PAGE, header, (thrift) =>
    thrift.struct(5, () => {
      thrift.i32(1, header.numValues)
      thrift.i32(2, ENCODING[header.encoding])
      thrift.i32(3, ENCODING.RLE)
      thrift.i32(4, ENCODING.RLE)
    })
  )

/** The header of the PLAIN dictionary page that precedes a chunk's RLE_DICTIONARY data pages. */
export const writeDictionaryPageHeader = (out: ByteBuffer, header: PageSizes): void =>
  writePageHeader(out, PAGE_TYPE.DICTIONARY_PAGE, header, (thrift) =>
    thrift.struct(7, () => {
      thrift.i32(1, header.numValues)
      thrift.i32(2, ENCODING.PLAIN)
    })
  )
