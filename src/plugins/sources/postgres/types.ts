import { formatLogicalType, type LogicalType, type Value } from "../../../core/batch.js"
import {
  decodeBigInt,
  decodeBool,
  decodeBytea,
  decodeDate,
  decodeIntegralBigInt,
  decodeNumber,
  decodeTime,
  decodeTimestamp,
  decodeTimestamptz,
  type Decoder,
  makeDecimalDecoder
} from "./decode.js"
import { parseArrayText } from "./array.js"

/** A row of `pg_type`, as loaded by catalog.ts. */
export interface PgType {
  readonly oid: number
  readonly name: string
  /** `typtype`: `b` base, `d` domain, `e` enum, `c` composite, `r`/`m` range, `p` pseudo. */
  readonly kind: string
  /** `typcategory`: `S` for string-like types (text, citext, …). */
  readonly category: string
  readonly element: number
  readonly length: number
  readonly baseType: number
  readonly typmod: number
}

type Base =
  | "int16"
  | "int32"
  | "int64"
  | "float32"
  | "float64"
  | "numeric"
  | "string"
  | "bool"
  | "date"
  | "time"
  | "timestamp"
  | "timestamptz"
  | "uuid"
  | "json"
  | "bytes"
  | "interval"

// Built-in types by OID (stable across servers). inet/cidr/macaddr map to string: their text form is canonical
// and lossless. timetz, money (locale-formatted), xml, bit strings, ranges, geometric and full-text types have no
// faithful logical type: they need a cast in SQL or a `string` override.
const BUILTIN = new Map<number, Base>([
  [16, "bool"],
  [17, "bytes"],
  [18, "string"], // "char"
  [19, "string"], // name
  [20, "int64"],
  [21, "int16"],
  [23, "int32"],
  [25, "string"],
  [26, "int64"], // oid
  [114, "json"],
  [650, "string"], // cidr
  [700, "float32"],
  [701, "float64"],
  [705, "string"], // unknown (untyped literals)
  [774, "string"], // macaddr8
  [829, "string"], // macaddr
  [869, "string"], // inet
  [1042, "string"], // bpchar: kept with its padding, as PostgreSQL returns it
  [1043, "string"],
  [1082, "date"],
  [1083, "time"],
  [1114, "timestamp"],
  [1184, "timestamptz"],
  [1186, "interval"],
  [1700, "numeric"],
  [2950, "uuid"],
  [3802, "json"]
])

/** A result column's PostgreSQL type, domains unwrapped. `name` is the type as users know it (`numeric(12,2)`). */
export type Shape =
  | {
      readonly kind: "scalar"
      readonly base: Base
      readonly typmod: number
      readonly name: string
      /** The base type's OID (after domains): which binary wire format its values arrive in. */
      readonly oid: number
      /** An enum: its binary wire format is the label's text. */
      readonly isEnum: boolean
    }
  | { readonly kind: "array"; readonly element: Shape; readonly name: string }
  | { readonly kind: "unsupported"; readonly name: string }

const numericTypmod = (typmod: number): { precision: number; scale: number } | undefined => {
  if (typmod < 4) return undefined
  const packed = typmod - 4
  // PostgreSQL 15 stores the scale as an 11-bit signed field (negative scales are allowed).
  return { precision: (packed >> 16) & 0xffff, scale: ((packed & 0x7ff) ^ 1024) - 1024 }
}

/** Resolves a type OID (plus a typmod from the column, -1 when unknown) to its shape through domains and arrays. */
export const resolveShape = (types: ReadonlyMap<number, PgType>, oid: number, typmod: number): Shape => {
  let type = types.get(oid)
  if (type === undefined) return { kind: "unsupported", name: `oid ${oid}` }
  const declaredName = type.name
  let mod = typmod
  for (let depth = 0; type.kind === "d" && depth < 16; depth++) {
    if (mod === -1) mod = type.typmod
    const base: PgType | undefined = types.get(type.baseType)
    if (base === undefined) return { kind: "unsupported", name: declaredName }
    type = base
  }
  if (type.element !== 0 && type.length === -1) {
    const element = resolveShape(types, type.element, mod)
    const name = declaredName === type.name ? `${element.name}[]` : declaredName
    return element.kind === "unsupported" ? { kind: "unsupported", name } : { kind: "array", element, name }
  }
  const base = BUILTIN.get(type.oid) ?? (type.kind === "e" || type.category === "S" ? "string" : undefined)
  if (base === undefined) return { kind: "unsupported", name: declaredName }
  const numeric = base === "numeric" ? numericTypmod(mod) : undefined
  const name = numeric && declaredName === type.name ? `numeric(${numeric.precision},${numeric.scale})` : declaredName
  return { kind: "scalar", base, typmod: mod, name, oid: type.oid, isEnum: type.kind === "e" }
}

/** How one result column becomes a batch column. `decode` undefined: the PostgreSQL text is the value. */
export interface ColumnPlan {
  readonly name: string
  readonly type: LogicalType
  readonly sourceType: string
  readonly decode: Decoder | undefined
  /** The column's PostgreSQL type: how its binary COPY values are read (binary-fields.ts). */
  readonly shape: Shape
}

/** Why a column cannot be exported as it is, and the fix. */
export interface Problem {
  readonly reason: string
  readonly fix: string
}

type Mapping = { readonly type: LogicalType; readonly decode: Decoder | undefined } | Problem

const isProblem = (mapping: Mapping): mapping is Problem => "reason" in mapping

const simple = (kind: Exclude<LogicalType["kind"], "decimal" | "list">, decode: Decoder | undefined): Mapping => ({
  type: { kind } as LogicalType,
  decode
})

/** The column as a YAML key in a suggested `columns:` override. */
const yamlKey = (column: string): string => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(column) ? column : JSON.stringify(column))

const sqlIdent = (column: string): string => `"${column.replace(/"/g, '""')}"`

const defaultMapping = (shape: Shape, column: string): Mapping => {
  switch (shape.kind) {
    case "unsupported":
      return {
        reason: `PostgreSQL type ${shape.name} has no lossless logical type`,
        fix: `cast it in SQL (e.g. ${sqlIdent(column)}::text) or override it: columns: { ${yamlKey(column)}: { type: string } }`
      }
    case "array": {
      const element = defaultMapping(shape.element, column)
      return isProblem(element) ? element : listOf(element.type, element.decode)
    }
    case "scalar":
      return scalarMapping(shape, column)
  }
}

const scalarMapping = (shape: Extract<Shape, { kind: "scalar" }>, column: string): Mapping => {
  switch (shape.base) {
    case "int16":
    case "int32":
    case "float32":
    case "float64":
      return simple(shape.base, decodeNumber)
    case "int64":
      return simple("int64", decodeBigInt)
    case "numeric": {
      const typmod = numericTypmod(shape.typmod)
      if (typmod === undefined || typmod.scale < 0 || typmod.scale > typmod.precision) {
        return {
          reason:
            typmod === undefined
              ? `${shape.name} has no declared precision and scale, and Rivet will not guess them`
              : `${shape.name} has a scale outside 0..precision`,
          fix: `override it in the export: columns: { ${yamlKey(column)}: { type: "decimal(38,9)" } } (choose your precision and scale)`
        }
      }
      return decimal(typmod.precision, typmod.scale)
    }
    case "bool":
      return simple("bool", decodeBool)
    case "date":
      return simple("date", decodeDate)
    case "time":
      return simple("time", decodeTime)
    case "timestamp":
      return simple("timestamp", decodeTimestamp)
    case "timestamptz":
      return simple("timestamptz", decodeTimestamptz)
    case "bytes":
      return simple("bytes", decodeBytea)
    case "string":
    case "uuid":
    case "json":
    case "interval":
      return simple(shape.base, undefined)
  }
}

const decimal = (precision: number, scale: number): Mapping => ({
  type: { kind: "decimal", precision, scale },
  decode: makeDecimalDecoder(precision, scale)
})

const listOf = (element: LogicalType, decode: Decoder | undefined): Mapping => ({
  type: { kind: "list", element },
  decode: (text) => {
    const items: Array<Value> = parseArrayText(text)
    if (decode !== undefined) {
      for (let i = 0; i < items.length; i++) {
        const item = items[i]
        if (typeof item === "string") items[i] = decode(item)
      }
    }
    return items
  }
})

const OVERRIDES_HELP =
  "supported overrides: string (any column, PostgreSQL's text), decimal(p,s) (numeric and integer columns), " +
  "int64 (integer and numeric columns), int32 (int2/int4), float64 (float and int2/int4 columns), list<…> of these for arrays"

const overrideMapping = (shape: Shape, target: LogicalType, column: string): Mapping => {
  if (target.kind === "string") return { type: target, decode: undefined }
  const detected = defaultMapping(shape, column)
  if (!isProblem(detected) && formatLogicalType(detected.type) === formatLogicalType(target)) return detected
  const refuse: Problem = {
    reason: `the override ${formatLogicalType(target)} does not fit PostgreSQL type ${shape.name}`,
    fix: OVERRIDES_HELP
  }
  if (shape.kind === "array") {
    if (target.kind !== "list") return refuse
    const element = overrideMapping(shape.element, target.element, column)
    return isProblem(element) ? element : listOf(element.type, element.decode)
  }
  if (shape.kind === "unsupported") return isProblem(detected) ? detected : refuse
  const base = shape.base
  const integer = base === "int16" || base === "int32" || base === "int64"
  switch (target.kind) {
    case "decimal":
      if (!(integer || base === "numeric")) return refuse
      if (!(target.precision >= 1 && target.scale >= 0 && target.scale <= target.precision)) {
        return { reason: `the override ${formatLogicalType(target)} is not a valid decimal`, fix: "use 0 <= scale <= precision" }
      }
      return decimal(target.precision, target.scale)
    case "int64":
      return integer ? simple("int64", decodeBigInt) : base === "numeric" ? simple("int64", decodeIntegralBigInt) : refuse
    case "int32":
      return base === "int16" || base === "int32" ? simple("int32", decodeNumber) : refuse
    case "float64":
      return base === "float32" || base === "float64" || base === "int16" || base === "int32"
        ? simple("float64", decodeNumber)
        : refuse
    default:
      return refuse
  }
}

/** The plan of one column — its default mapping, or the override's — or the problem to report. */
export const planColumn = (
  name: string,
  shape: Shape,
  override: LogicalType | undefined
): { readonly plan: ColumnPlan } | { readonly problem: Problem } => {
  const mapping = override === undefined ? defaultMapping(shape, name) : overrideMapping(shape, override, name)
  return isProblem(mapping)
    ? { problem: mapping }
    : { plan: { name, type: mapping.type, sourceType: shape.name, decode: mapping.decode, shape } }
}
