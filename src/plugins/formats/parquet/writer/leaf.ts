import type { LogicalType } from "../../../../core/batch.js"
import { limbCount } from "../decimal.js"
import { decimalByteLength } from "../schema.js"
import type { PhysicalType } from "./metadata.js"
import { type PlainEncoder, plainBinary, plainBool, plainDecimal, plainFixed, plainInt16, plainTyped } from "./plain.js"
import { boolMinMax, bytesMinMax, floatMinMax, int32MinMax, int64MinMax, type MinMax, wideDecimalMinMax } from "./statistics.js"

/** How one column's values are written: its leaf's path, physical type, list depth, value encoder and statistics. */
export interface LeafPlan {
  readonly path: ReadonlyArray<string>
  readonly physical: PhysicalType
  /** Lists around the leaf (0 for a flat column). */
  readonly depth: number
  readonly plain: PlainEncoder
  /** A fresh min/max accumulator per chunk; undefined where min/max help no reader (JSON documents). */
  readonly minMax: (() => MinMax) | undefined
  /** BYTE_ARRAY leaves try a dictionary per chunk. */
  readonly dictionary: boolean
}

interface Leaf {
  readonly physical: PhysicalType
  readonly plain: PlainEncoder
  readonly minMax: (() => MinMax) | undefined
}

const decimalLeaf = (precision: number): Leaf => {
  // prepareColumn parses decimals into limbs of the Parquet width (at least 64 bits).
  if (precision <= 9) return { physical: "INT32", plain: plainDecimal(4, 2, false), minMax: () => int32MinMax(2) }
  if (precision <= 18) return { physical: "INT64", plain: plainDecimal(8, 2, false), minMax: () => int64MinMax(2) }
  const width = decimalByteLength(precision)
  const limbs = limbCount(width)
  return { physical: "FIXED_LEN_BYTE_ARRAY", plain: plainDecimal(width, limbs, true), minMax: () => wideDecimalMinMax(limbs, width) }
}

const scalarLeaf = (type: Exclude<LogicalType, { kind: "list" }>): Leaf => {
  switch (type.kind) {
    case "int16":
      return { physical: "INT32", plain: plainInt16, minMax: () => int32MinMax(undefined) }
    case "int32":
    case "date":
      return { physical: "INT32", plain: plainTyped(4), minMax: () => int32MinMax(undefined) }
    case "int64":
    case "time":
    case "timestamp":
    case "timestamptz":
      return { physical: "INT64", plain: plainTyped(8), minMax: () => int64MinMax(undefined) }
    case "float32":
      return { physical: "FLOAT", plain: plainTyped(4), minMax: () => floatMinMax(4) }
    case "float64":
      return { physical: "DOUBLE", plain: plainTyped(8), minMax: () => floatMinMax(8) }
    case "bool":
      return { physical: "BOOLEAN", plain: plainBool, minMax: boolMinMax }
    case "uuid":
      return { physical: "FIXED_LEN_BYTE_ARRAY", plain: plainFixed, minMax: bytesMinMax }
    case "decimal":
      return decimalLeaf(type.precision)
    case "json":
      return { physical: "BYTE_ARRAY", plain: plainBinary, minMax: undefined }
    case "string":
    case "interval":
    case "bytes":
      return { physical: "BYTE_ARRAY", plain: plainBinary, minMax: bytesMinMax }
  }
}

/** The leaf plan of a top-level column (the path follows the three-level LIST layout of schema.ts). */
export const leafPlan = (name: string, type: LogicalType): LeafPlan => {
  const path = [name]
  let depth = 0
  let inner = type
  while (inner.kind === "list") {
    path.push("list", "element")
    depth++
    inner = inner.element
  }
  const leaf = scalarLeaf(inner)
  return { path, depth, ...leaf, dictionary: leaf.physical === "BYTE_ARRAY" }
}
