import { type FileMetaData, parquetMetadata, parquetRead, type SchemaElement } from "hyparquet"
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

// hyparquet's default TextDecoder drops a leading U+FEFF, which is part of the value.
const utf8 = new TextDecoder("utf-8", { ignoreBOM: true })

// Keep every value exact: epoch micros and day numbers as read, text and JSON as their text.
const parsers = {
  timestampFromMicroseconds: (micros: bigint) => micros,
  dateFromDays: (days: number) => days,
  stringFromBytes: (bytes: Uint8Array | undefined) => bytes && utf8.decode(bytes),
  jsonFromBytes: (bytes: Uint8Array | undefined) => bytes && utf8.decode(bytes)
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

const decodeText = (raw: unknown): unknown => (raw instanceof Uint8Array ? utf8.decode(raw) : raw)

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
 * Reads every row back with hyparquet, one array per row in the file's column order. hyparquet turns decimals
 * into JS numbers, so the file is read with the DECIMAL annotation taken off (raw unscaled values), which are
 * turned into exact text here; JSON comes back as its text, bytes as bytes.
 */
export const readRowArrays = async (file: ArrayBuffer): Promise<Array<Array<unknown>>> => {
  const metadata = metadataOf(file)
  const fixups = topLevelColumns(metadata.schema).map(({ leaf }): Fixup => {
    if (leaf.converted_type === "DECIMAL") return deep((raw) => decimalText(raw, leaf.scale ?? 0))
    if (leaf.logical_type?.type === "JSON") return deep(decodeText)
    return deep((raw) => raw)
  })
  const schema = metadata.schema.map((element): SchemaElement => {
    if (element.converted_type !== "DECIMAL") return element
    const { converted_type: _converted, logical_type: _logical, ...raw } = element
    return raw
  })
  let rows: Array<Array<unknown>> = []
  await parquetRead({
    file,
    metadata: { ...metadata, schema },
    compressors,
    parsers,
    utf8: false,
    rowFormat: "array",
    onComplete: (data) => {
      rows = data
    }
  })
  return rows.map((row) => row.map((value, c) => fixups[c]!(value)))
}

/** {@link readRowArrays}, each row as an object keyed by column name. */
export const readRows = async (file: ArrayBuffer): Promise<Array<Record<string, unknown>>> => {
  const names = topLevelColumns(metadataOf(file).schema).map((column) => column.name)
  return (await readRowArrays(file)).map((row) => Object.fromEntries(names.map((name, c) => [name, row[c]])))
}
