import type { ColumnData } from "../../../core/columns/data.js"
import type { ByteOut } from "./out.js"

/**
 * Float fields, memoised per column. Making a float's shortest round-trip text is the dearest step of the text
 * formats (a JS string per value; for a float4 several `toPrecision` calls), while a column's floats often repeat
 * (prices, scores, ratios). The text is a function of the value's bits alone, so a direct-mapped table keyed by
 * the bits keeps the text of recent values: a hit costs a hash and a compare, a miss what it cost before.
 */

const SLOT_BITS = 12
const SLOTS = 1 << SLOT_BITS

/** The text of float values, rendered by `render` once per distinct value that stays in the table. */
export class FloatTexts {
  private readonly low = new Int32Array(SLOTS)
  private readonly high = new Int32Array(SLOTS)
  private readonly texts: Array<string | undefined> = new Array<string | undefined>(SLOTS).fill(undefined)

  constructor(private readonly render: (value: number) => string) {}

  /** Writes the text of `value`, whose bits are `low` and `high` (0 for a float4). */
  write(out: ByteOut, value: number, low: number, high: number): void {
    const slot = Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> (32 - SLOT_BITS)
    let text = this.texts[slot]
    if (text === undefined || this.low[slot] !== low || this.high[slot] !== high) {
      text = this.render(value)
      this.texts[slot] = text
      this.low[slot] = low
      this.high[slot] = high
    }
    out.ascii(text)
  }
}

/** The writer of a float column's values through `texts` (the column's layout was checked). */
export const floatWriter = (column: ColumnData, texts: FloatTexts): ((out: ByteOut, row: number) => void) => {
  if (column.layout === "float32") {
    const values = column.values
    const bits = new Int32Array(values.buffer, values.byteOffset, values.length)
    return (out, row) => texts.write(out, values[row]!, bits[row]!, 0)
  }
  if (column.layout === "float64") {
    const values = column.values
    const halves = new Int32Array(values.buffer, values.byteOffset, values.length * 2)
    return (out, row) => texts.write(out, values[row]!, halves[2 * row]!, halves[2 * row + 1]!)
  }
  throw new TypeError(`expected floats, got ${column.layout}`)
}
