import { type FileMetaData, parquetMetadata, parquetReadObjects, type SchemaElement } from "hyparquet"
import { compressors } from "hyparquet-compressors"

/** Concatenates encoder output into one ArrayBuffer (the file as a sink would store it). */
export const concat = (chunks: ReadonlyArray<Uint8Array>): ArrayBuffer => {
  const total = chunks.reduce((sum, chunk) => sum + chunk.length, 0)
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out.buffer
}

export const metadataOf = (file: ArrayBuffer): FileMetaData => parquetMetadata(file)

// Keep every value exact: epoch micros and day numbers as read, JSON as its text.
const parsers = {
  timestampFromMicroseconds: (micros: bigint) => micros,
  dateFromDays: (days: number) => days,
  jsonFromBytes: (bytes: Uint8Array) => new TextDecoder().decode(bytes)
}

/** Unscaled integer → decimal text at `scale` (`-1230`, 2 → `-12.30`). */
export const unscaledToText = (unscaled: bigint, scale: number): string => {
  const negative = unscaled < 0n
  const digits = (negative ? -unscaled : unscaled).toString().padStart(scale + 1, "0")
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`
  return negative ? `-${text}` : text
}

const twosComplement = (bytes: Uint8Array): bigint => {
  let value = 0n
  for (const byte of bytes) value = (value << 8n) | BigInt(byte)
  return bytes.length > 0 && (bytes[0]! & 0x80) !== 0 ? value - (1n << BigInt(bytes.length * 8)) : value
}

const decimalText = (raw: unknown, scale: number): unknown => {
  if (typeof raw === "number" || typeof raw === "bigint") return unscaledToText(BigInt(raw), scale)
  if (raw instanceof Uint8Array) return unscaledToText(twosComplement(raw), scale)
  throw new Error(`unexpected decimal value ${String(raw)}`)
}

type Fixup = (raw: unknown) => unknown

const decodeText = (raw: unknown): unknown => (raw instanceof Uint8Array ? new TextDecoder().decode(raw) : raw)

const deep = (fix: Fixup): Fixup => (raw) =>
  raw === null || raw === undefined ? null : Array.isArray(raw) ? raw.map(deep(fix)) : fix(raw)

/** The top-level columns of a flat Parquet schema, each with the leaf element that holds its values. */
const topLevelColumns = (schema: ReadonlyArray<SchemaElement>): Array<{ name: string; leaf: SchemaElement }> => {
  let index = 1
  const subtreeLeaf = (): SchemaElement => {
    const element = schema[index++]!
    let leaf = element
    for (let child = 0; child < (element.num_children ?? 0); child++) leaf = subtreeLeaf()
    return leaf
  }
  return Array.from({ length: schema[0]?.num_children ?? 0 }, () => {
    const name = schema[index]!.name
    return { name, leaf: subtreeLeaf() }
  })
}

/**
 * Reads every row back with hyparquet. hyparquet turns decimals into JS numbers, so the file is read with the
 * DECIMAL annotation taken off (raw unscaled values), which are turned into exact text here; JSON comes back
 * as its text, bytes as bytes.
 */
export const readRows = async (file: ArrayBuffer): Promise<Array<Record<string, unknown>>> => {
  const metadata = metadataOf(file)
  const fixups = new Map<string, Fixup>()
  for (const { name, leaf } of topLevelColumns(metadata.schema)) {
    if (leaf.converted_type === "DECIMAL") fixups.set(name, deep((raw) => decimalText(raw, leaf.scale ?? 0)))
    else if (leaf.logical_type?.type === "JSON") fixups.set(name, deep(decodeText))
  }
  const schema = metadata.schema.map((element): SchemaElement => {
    if (element.converted_type !== "DECIMAL") return element
    const { converted_type: _converted, logical_type: _logical, ...raw } = element
    return raw
  })
  const rows = await parquetReadObjects({ file, metadata: { ...metadata, schema }, compressors, parsers, utf8: false })
  return rows.map((row) => {
    const out: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(row)) {
      const fix = fixups.get(key)
      out[key] = fix ? fix(value) : deep((raw) => raw)(value)
    }
    return out
  })
}
