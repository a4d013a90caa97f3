import type { ColumnData } from "../../../../core/columns/data.js"
import { sliceByteLength } from "../columns.js"
import { ByteBuffer } from "./bytes.js"
import { buildDictionary, type Dictionary } from "./dictionary.js"
import { bitWidthOf, writeHybrid } from "./hybrid.js"
import type { LeafPlan } from "./leaf.js"
import { Levels } from "./levels.js"
import { packBooleans } from "./plain.js"
import { type Codec, type ColumnChunkMeta, type Encoding, writeDataPageHeader, writeDictionaryPageHeader } from "./metadata.js"

/** Rows `[from, to)` of one batch's column, with its decimal limbs when it has any (see `prepareColumn`). */
export interface ChunkSlice {
  readonly column: ColumnData
  readonly words: Uint32Array | undefined
  readonly from: number
  readonly to: number
}

/** Compresses one page body; returns its input for UNCOMPRESSED. */
export type Compress = (body: Uint8Array) => Uint8Array

/** Buffers one part's pages are assembled in, reused from column to column. */
export class PageScratch {
  readonly body = new ByteBuffer(1 << 16)
  readonly values = new ByteBuffer(1 << 16)
  readonly header = new ByteBuffer(64)
  readonly levels = new Levels()
}

/** A page aims at this many bytes of values (before compression), as most writers do. */
export const PAGE_BYTES = 1 << 20

/** The innermost values that rows `[from, to)` of a (possibly nested) column hold. */
const leafRange = (data: ColumnData, from: number, to: number): { data: ColumnData; from: number; to: number } =>
  data.layout === "list" ? leafRange(data.child, data.offsets[from]!, data.offsets[to]!) : { data, from, to }

const countValid = (data: ColumnData, from: number, to: number): number => {
  const validity = data.validity
  if (validity === undefined) return to - from
  let count = 0
  for (let i = from; i < to; i++) count += (validity[i >>> 3]! >>> (i & 7)) & 1
  return count
}

/** Splits the slices into pages of about `PAGE_BYTES` each, at row boundaries. */
const pagesOf = (slices: ReadonlyArray<ChunkSlice>): Array<Array<ChunkSlice>> => {
  const pages: Array<Array<ChunkSlice>> = []
  let page: Array<ChunkSlice> = []
  let budget = PAGE_BYTES
  for (const slice of slices) {
    let from = slice.from
    while (from < slice.to) {
      let to = slice.to
      if (sliceByteLength(slice.column, from, to) > budget) {
        // The last row that still fits (at least one row per piece).
        let low = from + 1
        let high = slice.to
        while (low < high) {
          const mid = (low + high + 1) >>> 1
          if (sliceByteLength(slice.column, from, mid) <= budget) low = mid
          else high = mid - 1
        }
        to = low
      }
      page.push({ ...slice, from, to })
      budget -= sliceByteLength(slice.column, from, to)
      from = to
      if (budget <= 0) {
        pages.push(page)
        page = []
        budget = PAGE_BYTES
      }
    }
  }
  if (page.length > 0) pages.push(page)
  return pages
}

const levelsBytes = (out: ByteBuffer, levels: Uint8Array, count: number, maxLevel: number): void => {
  const lengthAt = out.length
  out.u32(0)
  writeHybrid(out, levels, count, bitWidthOf(maxLevel))
  out.setU32(lengthAt, out.length - lengthAt - 4)
}

const tryDictionary = (leaf: LeafPlan, slices: ReadonlyArray<ChunkSlice>): Dictionary | undefined => {
  if (!leaf.dictionary) return undefined
  const ranges = slices.map((slice) => leafRange(slice.column, slice.from, slice.to))
  const nonNull = ranges.reduce((sum, range) => sum + countValid(range.data, range.from, range.to), 0)
  if (nonNull === 0) return undefined
  return buildDictionary(
    ranges.map((range) => {
      if (range.data.layout !== "binary") throw new Error(`a BYTE_ARRAY column arrived with the ${range.data.layout} layout`)
      return { data: range.data, from: range.from, to: range.to }
    }),
    nonNull
  )
}

/**
 * Writes one column chunk of a row group to `out` — an optional dictionary page, then DATA_PAGE (v1) pages of
 * RLE levels and PLAIN or RLE_DICTIONARY values, each compressed — and returns its metadata. `base` is the file
 * offset of `out`'s first byte.
 */
export const writeColumnChunk = (
  out: ByteBuffer,
  base: number,
  leaf: LeafPlan,
  slices: ReadonlyArray<ChunkSlice>,
  codec: Codec,
  compress: Compress,
  scratch: PageScratch
): ColumnChunkMeta => {
  const start = out.length
  let uncompressed = 0
  let numValues = 0
  let nullCount = 0
  const maxDef = leaf.depth * 2 + 1
  const minMax = leaf.minMax?.()

  const appendPage = (body: Uint8Array, header: (compressedSize: number) => void) => {
    const compressed = compress(body)
    scratch.header.clear()
    header(compressed.length)
    out.append(scratch.header.written())
    out.append(compressed)
    uncompressed += scratch.header.length + body.length
  }

  const dictionary = tryDictionary(leaf, slices)
  let dictionaryPageOffset: number | undefined
  if (dictionary !== undefined) {
    dictionaryPageOffset = base + out.length
    const body = dictionary.page.written()
    appendPage(body, (compressedSize) =>
      writeDictionaryPageHeader(scratch.header, { uncompressedSize: body.length, compressedSize, numValues: dictionary.size })
    )
  }

  const dataPageOffset = base + out.length
  const encoding: Encoding = dictionary === undefined ? "PLAIN" : "RLE_DICTIONARY"
  // At least one bit: some readers reject a zero-width index page of a one-value dictionary.
  const indexWidth = dictionary === undefined ? 0 : Math.max(1, bitWidthOf(dictionary.size - 1))
  let nextIndex = 0
  for (const page of pagesOf(slices)) {
    const { levels, body, values } = scratch
    levels.clear()
    values.clear()
    let pageValues = 0
    for (const slice of page) {
      if (leaf.depth === 0) levels.appendFlat(slice.column, slice.from, slice.to)
      else levels.appendNested(slice.column, slice.from, slice.to)
      const range = leafRange(slice.column, slice.from, slice.to)
      minMax?.add(range.data, slice.words, range.from, range.to)
      const present = countValid(range.data, range.from, range.to)
      pageValues += present
      if (dictionary === undefined) leaf.plain(values, range.data, slice.words, range.from, range.to)
    }
    if (leaf.physical === "BOOLEAN") packBooleans(values)
    if (dictionary !== undefined) {
      values.u8(indexWidth)
      writeHybrid(values, dictionary.indices.subarray(nextIndex, nextIndex + pageValues), pageValues, indexWidth)
      nextIndex += pageValues
    }
    body.clear()
    if (leaf.depth > 0) levelsBytes(body, levels.rep, levels.length, leaf.depth)
    levelsBytes(body, levels.def, levels.length, maxDef)
    body.append(values.written())
    numValues += levels.length
    nullCount += levels.length - pageValues
    const bodyBytes = body.written()
    appendPage(bodyBytes, (compressedSize) =>
      writeDataPageHeader(scratch.header, {
        uncompressedSize: bodyBytes.length,
        compressedSize,
        numValues: levels.length,
        encoding
      })
    )
  }

  const statistics = minMax?.result()
  return {
    type: leaf.physical,
    encodings: dictionary === undefined ? ["PLAIN", "RLE"] : ["PLAIN", "RLE", "RLE_DICTIONARY"],
    path: leaf.path,
    codec,
    numValues,
    uncompressedSize: uncompressed,
    compressedSize: out.length - start,
    dataPageOffset,
    ...(dictionaryPageOffset === undefined ? {} : { dictionaryPageOffset }),
    statistics: { nullCount, ...(statistics ?? {}) }
  }
}
