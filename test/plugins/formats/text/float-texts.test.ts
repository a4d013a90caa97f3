import { describe, expect, it } from "@effect/vitest"
import { csvField, jsonField } from "../../../../src/plugins/formats/text/fields.js"
import { float32Text, float64Text } from "../../../../src/plugins/formats/text/numbers.js"
import { ByteOut } from "../../../../src/plugins/formats/text/out.js"
import type { Float32Data, Float64Data } from "../../../../src/core/columns/data.js"

/**
 * Float fields keep the text of recent values in a table keyed by the value's bits (src/plugins/formats/text/floats.ts):
 * whatever the order, repeats and slot collisions, every value must still get its own text.
 */

const float32Column = (values: Float32Array): Float32Data => ({
  layout: "float32",
  values,
  length: values.length,
  nullCount: 0,
  validity: undefined
})
const float64Column = (values: Float64Array): Float64Data => ({
  layout: "float64",
  values,
  length: values.length,
  nullCount: 0,
  validity: undefined
})

/** Mulberry32, so that a failure can be reproduced. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return (t ^ (t >>> 14)) >>> 0
}

/** Values with the specials, subnormals, repeats in every order and many values sharing a few slots. */
const float32Values = (): Float32Array => {
  const next = random(7)
  const bits = new Uint32Array(60_000)
  const specials = [0, 0x80000000, 0x7fc00000, 0xffc00001, 0x7f800000, 0xff800000, 1, 0x807fffff, 0x00800000]
  for (let i = 0; i < bits.length; i++) {
    const pick = next() % 4
    // Low bits only: many values differ just there, and land in few slots.
    if (pick === 0) bits[i] = 0x41e00000 | (next() & 0x3f)
    else if (pick === 1) bits[i] = specials[next() % specials.length]!
    else if (pick === 2) bits[i] = next() & 0x007fffff // subnormal
    else bits[i] = next()
  }
  return new Float32Array(bits.buffer)
}

const float64Values = (): Float64Array => {
  const next = random(11)
  const halves = new Uint32Array(120_000)
  const specials = [0, -0, Number.NaN, Infinity, -Infinity, Number.MIN_VALUE, -Number.MAX_VALUE, 2 ** -1074 * 3, 0.1]
  const values = new Float64Array(halves.buffer)
  for (let i = 0; i < values.length; i++) {
    const pick = next() % 4
    halves[2 * i] = next()
    halves[2 * i + 1] = next()
    // Short mantissas (1.5, 0.25): the low half is 0, so only the high half tells many values apart.
    if (pick === 0) {
      halves[2 * i] = 0
      halves[2 * i + 1] = 0x3ff00000 | (next() & 0xfffff)
    } else if (pick === 1) values[i] = specials[next() % specials.length]!
    else if (pick === 2) halves[2 * i + 1] = halves[2 * i + 1]! & 0x000fffff // subnormal
  }
  return values
}

const renderEach = (write: (out: ByteOut, row: number) => void, count: number): ReadonlyArray<string> => {
  const texts: Array<string> = []
  const out = new ByteOut(16)
  for (let row = 0; row < count; row++) {
    write(out, row)
    texts.push(Buffer.concat(out.take()).toString("latin1"))
  }
  return texts
}

const jsonOf = (text: string) => (/^-?[0-9]/.test(text) ? text : `"${text}"`)

describe("float fields", () => {
  it("float32: every value gets its own shortest text, in CSV and JSON", () => {
    const values = float32Values()
    const expected = Array.from(values, float32Text)
    const column = float32Column(values)
    expect(renderEach(csvField({ kind: "float32" })!(column), values.length)).toEqual(expected)
    expect(renderEach(jsonField({ kind: "float32" })!(column), values.length)).toEqual(expected.map(jsonOf))
  })

  it("float64: every value gets its own shortest text, in CSV and JSON", () => {
    const values = float64Values()
    const expected = Array.from(values, float64Text)
    expect(expected).toContain("-0")
    expect(expected).toContain("5e-324")
    const column = float64Column(values)
    expect(renderEach(csvField({ kind: "float64" })!(column), values.length)).toEqual(expected)
    expect(renderEach(jsonField({ kind: "float64" })!(column), values.length)).toEqual(expected.map(jsonOf))
  })

  it("one field keeps its texts across batches, and a new batch's values are read, not the old ones", () => {
    const field = jsonField({ kind: "float64" })!
    const first = new Float64Array([0.5, 1.5, -0])
    const second = new Float64Array([1.5, 0, Number.NaN])
    expect(renderEach(field(float64Column(first)), 3)).toEqual(["0.5", "1.5", "-0"])
    expect(renderEach(field(float64Column(second)), 3)).toEqual(["1.5", "0", '"NaN"'])
  })
})
