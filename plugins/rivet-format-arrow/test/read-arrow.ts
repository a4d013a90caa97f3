import { tableFromIPC, type Data } from "apache-arrow"
import type { LogicalType, Value } from "rivet-export/plugin"

const text = new TextDecoder()

/** Decimal words (two's complement, little-endian 32-bit) → exact decimal text with `scale` fraction digits. */
const decimalText = (words: Uint32Array, scale: number): string => {
  let unsigned = 0n
  for (let w = words.length - 1; w >= 0; w--) unsigned = (unsigned << 32n) | BigInt(words[w]!)
  const value = BigInt.asIntN(words.length * 32, unsigned)
  const digits = (value < 0n ? -value : value).toString().padStart(scale + 1, "0")
  const whole = digits.slice(0, digits.length - scale)
  return `${value < 0n ? "-" : ""}${whole}${scale > 0 ? `.${digits.slice(-scale)}` : ""}`
}

/**
 * Arrow data back to Rivet values, read from the raw buffers: apache-arrow's `get` turns timestamps into float
 * milliseconds and cannot print negative Decimal256 values, so an exact comparison needs the stored integers.
 */
export const decodeData = (data: Data, type: LogicalType): Array<Value> => {
  const out: Array<Value> = []
  const child = type.kind === "list" ? decodeData(data.children[0]!, type.element) : []
  for (let i = 0; i < data.length; i++) {
    if (!data.getValid(i)) {
      out.push(null)
      continue
    }
    // A slice keeps its buffers cut to it, except the bit-packed ones (validity, booleans), which `offset` indexes.
    const j = data.offset + i
    const values = data.values as ArrayLike<number | bigint> & { subarray: (a: number, b: number) => Uint8Array & Uint32Array }
    const offsets = data.valueOffsets as Int32Array
    switch (type.kind) {
      case "bool":
        out.push(((Number(values[j >> 3]) >> (j & 7)) & 1) === 1)
        break
      case "decimal": {
        const stride = type.precision <= 38 ? 4 : 8
        out.push(decimalText(values.subarray(i * stride, (i + 1) * stride), type.scale))
        break
      }
      case "string":
      case "uuid":
      case "json":
      case "interval":
        out.push(text.decode(values.subarray(offsets[i]!, offsets[i + 1]!)))
        break
      case "bytes":
        out.push(Uint8Array.from(values.subarray(offsets[i]!, offsets[i + 1]!)))
        break
      case "list":
        out.push(child.slice(offsets[i]!, offsets[i + 1]!))
        break
      default:
        out.push(values[i]!)
    }
  }
  return out
}

/** Reads an Arrow IPC file: the Arrow table and every column decoded back to Rivet values, by name. */
export const readArrow = (bytes: Uint8Array, types: Readonly<Record<string, LogicalType>>) => {
  const table = tableFromIPC(bytes)
  const columns: Record<string, Array<Value>> = {}
  for (const [name, type] of Object.entries(types)) {
    const vector = table.getChild(name)
    if (!vector) throw new Error(`no column ${name} in the Arrow file`)
    columns[name] = vector.data.flatMap((data) => decodeData(data, type))
  }
  return { table, columns }
}
