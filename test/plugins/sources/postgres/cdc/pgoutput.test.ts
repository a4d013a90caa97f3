import { afterEach, describe, expect, it, vi } from "vitest"
import { type Batch, batchToRows, type Column, type Value } from "../../../../../src/core/batch.js"
import { fieldReader } from "../../../../../src/plugins/sources/postgres/binary-fields.js"
import { decodedText, passthrough } from "../../../../../src/plugins/sources/postgres/binary-variable.js"
import type { FieldSink } from "../../../../../src/plugins/sources/postgres/binary-wire.js"
import { changeSchema } from "../../../../../src/plugins/sources/postgres/cdc/change-columns.js"
import {
  type ChangeTarget,
  type DecoderEvent,
  parseRelation,
  PgoutputDecoder,
  PgoutputError,
  type Relation
} from "../../../../../src/plugins/sources/postgres/cdc/pgoutput.js"
import { DecodeFailure } from "../../../../../src/plugins/sources/postgres/decode.js"
import { type ColumnPlan, planColumn, type Shape } from "../../../../../src/plugins/sources/postgres/types.js"

// The pgoutput decoder at the byte level: messages written byte by byte as PostgreSQL's "Logical Replication
// Message Formats" lay them out (protocol version 1), decoded through the real binary and text field sinks.

/** A tiny pgoutput writer: big-endian integers, NUL-terminated strings, raw bytes. */
class Wire {
  private readonly bytes: Array<number> = []
  u8(value: number): this {
    this.bytes.push(value & 0xff)
    return this
  }
  i16(value: number): this {
    return this.u8(value >> 8).u8(value)
  }
  i32(value: number): this {
    return this.u8(value >>> 24).u8(value >>> 16).u8(value >>> 8).u8(value)
  }
  u64(value: bigint): this {
    const word = BigInt.asUintN(64, value)
    return this.i32(Number(word >> 32n)).i32(Number(word & 0xffffffffn))
  }
  cstring(text: string): this {
    return this.raw(utf8(text)).u8(0)
  }
  raw(bytes: Uint8Array): this {
    for (const byte of bytes) this.bytes.push(byte)
    return this
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes)
  }
}

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text)

/** One value of a TupleData: 'n', 'u', 't' (text) or 'b' (binary). */
type Cell = null | "unchanged" | { readonly t: string } | { readonly b: Uint8Array }

const tuple = (wire: Wire, cells: ReadonlyArray<Cell>): Wire => {
  wire.i16(cells.length)
  for (const cell of cells) {
    if (cell === null) wire.u8(0x6e)
    else if (cell === "unchanged") wire.u8(0x75)
    else if ("t" in cell) wire.u8(0x74).i32(utf8(cell.t).byteLength).raw(utf8(cell.t))
    else wire.u8(0x62).i32(cell.b.byteLength).raw(cell.b)
  }
  return wire
}

const PG_EPOCH_MICROS = 946_684_800_000_000n

const msg = {
  begin: (finalLsn: bigint, commitMicros1970: bigint, xid: number) =>
    new Wire().u8(0x42).u64(finalLsn).u64(commitMicros1970 - PG_EPOCH_MICROS).i32(xid).done(),
  commit: (commitLsn: bigint, endLsn: bigint, commitMicros1970: bigint) =>
    new Wire().u8(0x43).u8(0).u64(commitLsn).u64(endLsn).u64(commitMicros1970 - PG_EPOCH_MICROS).done(),
  relation: (relation: Relation) => {
    const wire = new Wire().u8(0x52).i32(relation.oid).cstring(relation.schema).cstring(relation.name)
    wire.u8(relation.replicaIdentity.charCodeAt(0)).i16(relation.columns.length)
    for (const column of relation.columns) wire.u8(column.key ? 1 : 0).cstring(column.name).i32(column.type).i32(column.typmod)
    return wire.done()
  },
  insert: (oid: number, cells: ReadonlyArray<Cell>) => tuple(new Wire().u8(0x49).i32(oid).u8(0x4e), cells).done(),
  update: (oid: number, cells: ReadonlyArray<Cell>, old?: { readonly kind: "K" | "O"; readonly cells: ReadonlyArray<Cell> }) => {
    const wire = new Wire().u8(0x55).i32(oid)
    if (old !== undefined) tuple(wire.u8(old.kind.charCodeAt(0)), old.cells)
    return tuple(wire.u8(0x4e), cells).done()
  },
  delete: (oid: number, kind: "K" | "O", cells: ReadonlyArray<Cell>) => tuple(new Wire().u8(0x44).i32(oid).u8(kind.charCodeAt(0)), cells).done(),
  truncate: (oids: ReadonlyArray<number>) => {
    const wire = new Wire().u8(0x54).i32(oids.length).u8(0)
    for (const oid of oids) wire.i32(oid)
    return wire.done()
  }
}

// Binary values, as typsend writes them.
const int8 = (value: bigint): Cell => ({ b: new Wire().u64(value).done() })
const int4 = (value: number): Cell => ({ b: new Wire().i32(value).done() })
const text = (value: string): Cell => ({ b: utf8(value) })
/** numeric: digit count, weight, sign, display scale, base-10000 digits. */
const numeric = (weight: number, negative: boolean, scale: number, digits: ReadonlyArray<number>): Cell => {
  const wire = new Wire().i16(digits.length).i16(weight).i16(negative ? 0x4000 : 0).i16(scale)
  for (const digit of digits) wire.i16(digit)
  return { b: wire.done() }
}
const timestamptz = (micros1970: bigint): Cell => ({ b: new Wire().u64(micros1970 - PG_EPOCH_MICROS).done() })

const scalar = (base: Extract<Shape, { kind: "scalar" }>["base"], oid: number, name: string, typmod = -1): Shape => ({
  kind: "scalar",
  base,
  typmod,
  name,
  oid,
  isEnum: false
})
const plan = (name: string, shape: Shape): ColumnPlan => {
  const planned = planColumn(name, shape, undefined)
  if (!("plan" in planned)) throw new Error(planned.problem.reason)
  return planned.plan
}

const ORDERS = 16_384
const NUMERIC_12_2 = ((12 << 16) | 2) + 4
const orders: Relation = {
  oid: ORDERS,
  schema: "public",
  name: "orders",
  replicaIdentity: "d",
  columns: [
    { name: "id", type: 20, typmod: -1, key: true },
    { name: "n", type: 23, typmod: -1, key: false },
    { name: "note", type: 25, typmod: -1, key: false },
    { name: "amount", type: 1700, typmod: NUMERIC_12_2, key: false },
    { name: "at", type: 1184, typmod: -1, key: false }
  ]
}
const ORDER_PLANS = [
  plan("id", scalar("int64", 20, "int8")),
  plan("n", scalar("int32", 23, "int4")),
  plan("note", scalar("string", 25, "text")),
  plan("amount", scalar("numeric", 1700, "numeric(12,2)", NUMERIC_12_2)),
  plan("at", scalar("timestamptz", 1184, "timestamptz"))
]

const schemaOf = (plans: ReadonlyArray<ColumnPlan>) => {
  const result = changeSchema(plans.map((p): Column => ({ name: p.name, type: p.type, sourceType: p.sourceType })))
  if (!("schema" in result)) throw new Error(result.problem.reason)
  return result.schema
}
const binaryTarget = (plans: ReadonlyArray<ColumnPlan>): ChangeTarget => ({
  schema: schemaOf(plans),
  sinks: plans.map((p) => fieldReader(p).make)
})
/** Text mode ('t' values): strings as they are, the rest through the plan's text decoder. */
const textTarget = (plans: ReadonlyArray<ColumnPlan>): ChangeTarget => ({
  schema: schemaOf(plans),
  sinks: plans.map((p) => (p.type.kind === "string" && p.decode === undefined ? passthrough(0, "text") : decodedText(p)))
})

/** A relation of `count` text columns c1…c<count>, c1 the key. */
const wide = (oid: number, count: number): { relation: Relation; plans: Array<ColumnPlan> } => {
  const names = Array.from({ length: count }, (_, i) => `c${i + 1}`)
  return {
    relation: {
      oid,
      schema: "public",
      name: `wide${count}`,
      replicaIdentity: "d",
      columns: names.map((name, i) => ({ name, type: 25, typmod: -1, key: i === 0 }))
    },
    plans: names.map((name) => plan(name, scalar("string", 25, "text")))
  }
}

const LSN = 0x16_b374d848n
const END_LSN = 0x16_b374d900n
const COMMIT_MICROS = 1_706_067_200_123_456n // 2024-01-24T03:33:20.123456Z
const XID = 4_000_000_000

const feed = (decoder: PgoutputDecoder, ...messages: ReadonlyArray<Uint8Array>): Array<DecoderEvent> => {
  for (const message of messages) decoder.message(message, 0, message.length)
  return decoder.take()
}

const decoderWith = (target: ChangeTarget | undefined = binaryTarget(ORDER_PLANS), batchRows = 1000, batchBytes = 4 << 20) => {
  const decoder = new PgoutputDecoder({ batchRows, batchBytes })
  decoder.define(orders, target)
  return decoder
}

const rowsOf = (event: DecoderEvent | undefined): Array<Record<string, Value>> => {
  if (event?._tag !== "Rows") throw new Error(`not a Rows event: ${event?._tag}`)
  return batchToRows(event.batch)
}

/** Feeds the messages, then flushes: the events of both. */
const feedThenFlush = (decoder: PgoutputDecoder, ...messages: ReadonlyArray<Uint8Array>): Array<DecoderEvent> => {
  const events = feed(decoder, ...messages)
  decoder.flush()
  return [...events, ...decoder.take()]
}

/** The rows of every Rows event, in order. */
const allRows = (events: ReadonlyArray<DecoderEvent>): Array<Record<string, Value>> =>
  events.flatMap((event) => (event._tag === "Rows" ? batchToRows(event.batch) : []))

/** What each event is: `Rows(3)`, `Commit`, `Truncate`. */
const shapes = (events: ReadonlyArray<DecoderEvent>): Array<string> =>
  events.map((event) => (event._tag === "Rows" ? `Rows(${event.batch.rowCount})` : event._tag))

const change = {
  __pos: "00000016/B374D848",
  __commit_ts: COMMIT_MICROS,
  __txid: BigInt(XID),
  __unchanged: null
}
const orderRow = { id: 1n, n: 7, note: "héllo ✓", amount: "12.34", at: 1_700_000_000_000_001n }
const orderCells: ReadonlyArray<Cell> = [int8(1n), int4(7), text("héllo ✓"), numeric(0, false, 2, [12, 3400]), timestamptz(1_700_000_000_000_001n)]

afterEach(() => {
  vi.restoreAllMocks()
})

describe("parseRelation", () => {
  it("reads the relation's identity, replica identity and columns (key flag, type, typmod)", () => {
    const bytes = msg.relation(orders)
    expect(parseRelation(bytes, 0)).toEqual(orders)
    // At an offset (an XLogData's payload starts at byte 25).
    expect(parseRelation(new Uint8Array([...new Uint8Array(25), ...bytes]), 25)).toEqual(orders)
  })

  it("protocol version 1's empty namespace is pg_catalog; every replica identity reads", () => {
    for (const identity of ["d", "n", "f", "i"] as const) {
      const relation = parseRelation(msg.relation({ ...orders, schema: "", replicaIdentity: identity }), 0)
      expect([relation.schema, relation.replicaIdentity]).toEqual(["pg_catalog", identity])
    }
  })

  it("refuses another message, a cut one and an unknown replica identity", () => {
    expect(() => parseRelation(msg.begin(LSN, COMMIT_MICROS, 1), 0)).toThrow(PgoutputError)
    const bytes = msg.relation(orders)
    expect(() => parseRelation(bytes.subarray(0, bytes.length - 3), 0)).toThrow(/too short/)
    expect(() => parseRelation(bytes.subarray(0, 12), 0)).toThrow(/past the end/)
    expect(() => parseRelation(msg.relation({ ...orders, replicaIdentity: "x" as "d" }), 0)).toThrow(/replica identity 'x'/)
  })
})

describe("PgoutputDecoder: changes into batches", () => {
  it("insert, update and delete (binary values): the change columns and the row images", () => {
    const target = binaryTarget(ORDER_PLANS)
    const decoder = decoderWith(target)
    expect(decoder.inTransaction).toBe(false)
    feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID))
    expect(decoder.inTransaction).toBe(true)
    const events = feed(
      decoder,
      msg.insert(ORDERS, orderCells),
      msg.update(ORDERS, [int8(1n), int4(-8), text(""), numeric(0, true, 2, [1, 5000]), null]),
      msg.delete(ORDERS, "O", [int8(1n), int4(-8), text(""), numeric(0, true, 2, [1, 5000]), null])
    )
    expect(events).toEqual([])
    expect(decoder.rowsInTransaction).toBe(3)
    expect(feed(decoder, msg.commit(LSN, END_LSN, COMMIT_MICROS))).toEqual([
      { _tag: "Commit", commitLsn: Number(LSN), endLsn: Number(END_LSN) }
    ])
    expect(decoder.inTransaction).toBe(false)
    expect(decoder.rowsInTransaction).toBe(0)
    expect(decoder.changes).toBe(3)
    decoder.flush()
    const flushed = decoder.take()
    expect(shapes(flushed)).toEqual(["Rows(3)"])
    expect(flushed[0]).toMatchObject({ _tag: "Rows", oid: ORDERS })
    expect((flushed[0] as { batch: Batch }).batch.schema).toBe(target.schema)
    const after = { id: 1n, n: -8, note: "", amount: "-1.50", at: null }
    expect(rowsOf(flushed[0])).toEqual([
      { __op: "insert", ...change, __seq: 0n, ...orderRow },
      { __op: "update", ...change, __seq: 1n, ...after },
      { __op: "delete", ...change, __seq: 2n, ...after }
    ])
  })

  it("text values ('t') through text sinks give the same rows", () => {
    const decoder = decoderWith(textTarget(ORDER_PLANS))
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, XID),
      msg.insert(ORDERS, [{ t: "1" }, { t: "7" }, { t: "héllo ✓" }, { t: "12.34" }, { t: "2023-11-14 22:13:20.000001+00" }]),
      msg.update(ORDERS, [{ t: "1" }, { t: "-8" }, { t: "" }, { t: "-1.50" }, null]),
      msg.commit(LSN, END_LSN, COMMIT_MICROS)
    )
    expect(allRows(events)).toEqual([
      { __op: "insert", ...change, __seq: 0n, ...orderRow },
      { __op: "update", ...change, __seq: 1n, id: 1n, n: -8, note: "", amount: "-1.50", at: null }
    ])
  })

  it("a key-only delete ('K'): the key, every other column NULL (and not listed as unchanged)", () => {
    const decoder = decoderWith()
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, XID),
      msg.delete(ORDERS, "K", [int8(42n), null, null, null, null]),
      msg.commit(LSN, END_LSN, COMMIT_MICROS)
    )
    expect(allRows(events)).toEqual([{ __op: "delete", ...change, __seq: 0n, id: 42n, n: null, note: null, amount: null, at: null }])
  })

  it("an unchanged TOAST value ('u') is taken from the old tuple 'O' (REPLICA IDENTITY FULL), else NULL and named in __unchanged", () => {
    const decoder = decoderWith()
    const big = "x".repeat(5000)
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, XID),
      // FULL: the old row is complete.
      msg.update(ORDERS, [int8(1n), int4(2), "unchanged", null, null], { kind: "O", cells: [int8(1n), int4(1), text(big), null, null] }),
      // DEFAULT: no old tuple.
      msg.update(ORDERS, [int8(1n), int4(3), "unchanged", null, null]),
      // DEFAULT with the key changed: the old key tuple holds the key only.
      msg.update(ORDERS, [int8(2n), int4(4), "unchanged", null, "unchanged"], { kind: "K", cells: [int8(1n), null, null, null, null] }),
      msg.commit(LSN, END_LSN, COMMIT_MICROS)
    )
    expect(allRows(events)).toEqual([
      { __op: "update", ...change, __seq: 0n, id: 1n, n: 2, note: big, amount: null, at: null },
      { __op: "update", ...change, __seq: 1n, __unchanged: ["note"], id: 1n, n: 3, note: null, amount: null, at: null },
      { __op: "update", ...change, __seq: 2n, __unchanged: ["note", "at"], id: 2n, n: 4, note: null, amount: null, at: null }
    ])
  })

  it("any number of columns: 45, with 'u' in column 40 (named, or filled from the old tuple)", () => {
    const { relation, plans } = wide(20_000, 45)
    const decoder = new PgoutputDecoder({ batchRows: 100, batchBytes: 1 << 20 })
    decoder.define(relation, binaryTarget(plans))
    const values = (tag: string) => plans.map((_, i) => text(`${tag}${i + 1}`))
    const changed = values("new").map((cell, i) => (i === 39 || i === 1 ? "unchanged" : cell))
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, 9),
      msg.update(relation.oid, changed),
      msg.update(relation.oid, changed, { kind: "O", cells: values("old") }),
      msg.commit(LSN, END_LSN, COMMIT_MICROS)
    )
    const [withoutOld, withOld] = allRows(events)
    expect(withoutOld!.__unchanged).toEqual(["c2", "c40"])
    expect([withoutOld!.c1, withoutOld!.c2, withoutOld!.c39, withoutOld!.c40, withoutOld!.c41, withoutOld!.c45]).toEqual([
      "new1", null, "new39", null, "new41", "new45"
    ])
    expect(withOld!.__unchanged).toBeNull()
    expect([withOld!.c2, withOld!.c40, withOld!.c45]).toEqual(["old2", "old40", "new45"])
  })

  it("rows of several relations: each its own batch; __seq counts the transaction's changes across them", () => {
    const { relation, plans } = wide(20_001, 2)
    const decoder = decoderWith()
    decoder.define(relation, binaryTarget(plans))
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, XID),
      msg.insert(ORDERS, orderCells),
      msg.insert(relation.oid, [text("a"), text("b")]),
      msg.insert(ORDERS, orderCells),
      msg.commit(LSN, END_LSN, COMMIT_MICROS)
    )
    expect(events.map((event) => (event._tag === "Rows" ? event.oid : event._tag))).toEqual(["Commit", ORDERS, relation.oid])
    expect(rowsOf(events[1]).map((row) => row.__seq)).toEqual([0n, 2n])
    expect(rowsOf(events[2])).toEqual([{ __op: "insert", ...change, __seq: 1n, c1: "a", c2: "b" }])
  })

  it("a message inside a larger buffer reads b[start, end) only", () => {
    const decoder = decoderWith()
    const insert = msg.insert(ORDERS, orderCells)
    const framed = new Uint8Array([...new Uint8Array(25).fill(0xee), ...insert, 0x6e, 0x6e])
    feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID))
    decoder.message(framed, 25, 25 + insert.length)
    expect(allRows(feedThenFlush(decoder, msg.commit(LSN, END_LSN, COMMIT_MICROS)))).toEqual([
      { __op: "insert", ...change, __seq: 0n, ...orderRow }
    ])
  })

  it("the commit time (µs since 2000 on the wire → since 1970) and LSNs past 32 bits, up to 2^53 - 1", () => {
    const decoder = decoderWith()
    const events = feedThenFlush(
      decoder,
      msg.begin(0x1fffff_fffffff0n, 0n, 0xffffffff),
      msg.insert(ORDERS, orderCells),
      msg.commit(0x1fffff_fffffff0n, 0x1fffff_ffffffffn, 0n)
    )
    const [row] = allRows(events)
    expect([row!.__pos, row!.__commit_ts, row!.__txid]).toEqual(["001FFFFF/FFFFFFF0", 0n, 4_294_967_295n])
    expect(events[0]).toEqual({ _tag: "Commit", commitLsn: 2 ** 53 - 16, endLsn: 2 ** 53 - 1 })
    // Before 2000: a negative offset on the wire.
    const early = feedThenFlush(decoder, msg.begin(1n, 86_400_000_000n, 1), msg.insert(ORDERS, orderCells), msg.commit(1n, 2n, 0n))
    expect(allRows(early)[0]!.__commit_ts).toBe(86_400_000_000n)
  })
})

describe("PgoutputDecoder: batches", () => {
  it("cuts a relation's batch at batchRows", () => {
    const decoder = decoderWith(binaryTarget(ORDER_PLANS), 3)
    const inserts = Array.from({ length: 7 }, () => msg.insert(ORDERS, orderCells))
    const events = feedThenFlush(decoder, msg.begin(LSN, COMMIT_MICROS, XID), ...inserts, msg.commit(LSN, END_LSN, COMMIT_MICROS))
    expect(shapes(events)).toEqual(["Rows(3)", "Rows(3)", "Commit", "Rows(1)"])
    expect(allRows(events).map((row) => row.__seq)).toEqual([0n, 1n, 2n, 3n, 4n, 5n, 6n])
  })

  it("cuts a relation's batch once its bytes reach batchBytes", () => {
    const { relation, plans } = wide(20_002, 2)
    const decoder = new PgoutputDecoder({ batchRows: 1000, batchBytes: 10_000 })
    decoder.define(relation, binaryTarget(plans))
    // A row of 1 000 value bytes (plus the change columns' and offsets' few dozen): the 10th reaches 10 000.
    const inserts = Array.from({ length: 25 }, (_, i) => msg.insert(relation.oid, [text(String(i).padStart(8, "0")), text("v".repeat(992))]))
    const events = feedThenFlush(decoder, msg.begin(LSN, COMMIT_MICROS, XID), ...inserts, msg.commit(LSN, END_LSN, COMMIT_MICROS))
    expect(shapes(events)).toEqual(["Rows(10)", "Rows(10)", "Commit", "Rows(5)"])
  })

  it("a 1 000-row transaction with batchRows 100: 10 Rows events as the rows arrive, then one Commit", () => {
    const decoder = decoderWith(binaryTarget(ORDER_PLANS), 100)
    const all: Array<DecoderEvent> = [...feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID))]
    for (let i = 0; i < 1000; i++) {
      const events = feed(decoder, msg.insert(ORDERS, [int8(BigInt(i)), int4(i), text(`row ${i}`), null, null]))
      // Never more than one batch held: a full one is handed over at once.
      expect(events.length).toBe(i % 100 === 99 ? 1 : 0)
      all.push(...events)
    }
    all.push(...feedThenFlush(decoder, msg.commit(LSN, END_LSN, COMMIT_MICROS)))
    expect(shapes(all)).toEqual([...Array.from({ length: 10 }, () => "Rows(100)"), "Commit"])
    const rows = allRows(all)
    expect(rows.map((row) => row.id)).toEqual(Array.from({ length: 1000 }, (_, i) => BigInt(i)))
    expect(rows.map((row) => row.__seq)).toEqual(Array.from({ length: 1000 }, (_, i) => BigInt(i)))
    expect(decoder.changes).toBe(1000)
  })

  it("batches span transactions; flush() right after a Commit makes it a boundary: every row up to it before, none after", () => {
    const decoder = decoderWith(binaryTarget(ORDER_PLANS), 5)
    const transaction = (n: number, rows: number) => [
      msg.begin(LSN + BigInt(n), COMMIT_MICROS, n),
      ...Array.from({ length: rows }, (_, i) => msg.insert(ORDERS, [int8(BigInt(n * 10 + i)), null, null, null, null])),
      msg.commit(LSN + BigInt(n), END_LSN + BigInt(n), COMMIT_MICROS)
    ]
    const events = feed(decoder, ...transaction(1, 2), ...transaction(2, 2), ...transaction(3, 2))
    // The 5th row (the first of transaction 3) fills the batch.
    expect(shapes(events)).toEqual(["Commit", "Commit", "Rows(5)", "Commit"])
    expect(allRows(events).map((row) => [row.__txid, row.id])).toEqual([[1n, 10n], [1n, 11n], [2n, 20n], [2n, 21n], [3n, 30n]])
    decoder.flush()
    const rest = decoder.take()
    expect(allRows(rest).map((row) => [row.__txid, row.id])).toEqual([[3n, 31n]])
    // The next transaction's rows start a new batch.
    expect(allRows(feedThenFlush(decoder, ...transaction(4, 1))).map((row) => [row.__txid, row.__pos, row.id])).toEqual([
      [4n, "00000016/B374D84C", 40n]
    ])
  })

  it("the builders are reused: each cut finishes and resets every sink once", () => {
    const calls = { finish: 0, reset: 0 }
    const counted = (make: (capacity: number) => FieldSink) => (capacity: number) => {
      const sink = make(capacity)
      const { finish, reset } = sink
      sink.finish = () => (calls.finish++, finish.call(sink))
      sink.reset = () => (calls.reset++, reset.call(sink))
      return sink
    }
    const target = binaryTarget(ORDER_PLANS)
    const decoder = decoderWith({ ...target, sinks: target.sinks.map(counted) }, 4)
    const inserts = Array.from({ length: 10 }, () => msg.insert(ORDERS, orderCells))
    const events = feedThenFlush(decoder, msg.begin(LSN, COMMIT_MICROS, XID), ...inserts, msg.commit(LSN, END_LSN, COMMIT_MICROS))
    expect(shapes(events)).toEqual(["Rows(4)", "Rows(4)", "Commit", "Rows(2)"])
    expect(calls).toEqual({ finish: 15, reset: 15 })
    // Batches don't share buffers: the first still reads as it was.
    expect(rowsOf(events[0])).toHaveLength(4)
    expect(rowsOf(events[0])[3]).toEqual({ __op: "insert", ...change, __seq: 3n, ...orderRow })
  })

  it("decodes rows without a TextDecoder or TextEncoder call (no string per value)", () => {
    const decoder = decoderWith(binaryTarget(ORDER_PLANS), 500)
    const inserts = Array.from({ length: 1000 }, (_, i) => msg.insert(ORDERS, [int8(BigInt(i)), int4(i), text(`row ${i} ü`), null, null]))
    const begin = msg.begin(LSN, COMMIT_MICROS, XID)
    const commit = msg.commit(LSN, END_LSN, COMMIT_MICROS)
    const decode = vi.spyOn(TextDecoder.prototype, "decode")
    const encode = vi.spyOn(TextEncoder.prototype, "encode")
    const events = feed(decoder, begin, ...inserts, commit)
    expect(decode).not.toHaveBeenCalled()
    expect(encode).not.toHaveBeenCalled()
    expect(shapes(events)).toEqual(["Rows(500)", "Rows(500)", "Commit"])
  })

  it("flush() hands over every relation's partial batch, also inside a transaction", () => {
    const decoder = decoderWith()
    const events = feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID), msg.insert(ORDERS, orderCells), msg.insert(ORDERS, orderCells))
    expect(events).toEqual([])
    decoder.flush()
    expect(shapes(decoder.take())).toEqual(["Rows(2)"])
    decoder.flush()
    expect(decoder.take()).toEqual([])
    expect(shapes(feedThenFlush(decoder, msg.insert(ORDERS, orderCells), msg.commit(LSN, END_LSN, COMMIT_MICROS)))).toEqual([
      "Commit",
      "Rows(1)"
    ])
  })
})

describe("PgoutputDecoder: relations", () => {
  it("define() of a changed relation hands over the old shape's rows first, then writes the new shape", () => {
    const decoder = decoderWith()
    feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID), msg.insert(ORDERS, orderCells))
    const extra = plan("extra", scalar("int32", 23, "int4"))
    const altered: Relation = { ...orders, columns: [...orders.columns, { name: "extra", type: 23, typmod: -1, key: false }] }
    const newTarget = binaryTarget([...ORDER_PLANS, extra])
    expect(decoder.relation(ORDERS)).toEqual(orders)
    decoder.define(parseRelation(msg.relation(altered), 0), newTarget)
    expect(decoder.relation(ORDERS)).toEqual(altered)
    const handed = decoder.take()
    expect(shapes(handed)).toEqual(["Rows(1)"])
    expect((handed[0] as { batch: Batch }).batch.schema.columns).toHaveLength(11)
    expect(rowsOf(handed[0])).toEqual([{ __op: "insert", ...change, __seq: 0n, ...orderRow }])
    const events = feedThenFlush(decoder, msg.insert(ORDERS, [...orderCells, int4(42)]), msg.commit(LSN, END_LSN, COMMIT_MICROS))
    expect(shapes(events)).toEqual(["Commit", "Rows(1)"])
    expect((events[1] as { batch: Batch }).batch.schema).toBe(newTarget.schema)
    expect(rowsOf(events[1])).toEqual([{ __op: "insert", ...change, __seq: 1n, ...orderRow, extra: 42 }])
  })

  it("a change of a relation never defined throws; a Relation message must go through define", () => {
    const decoder = decoderWith()
    feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID))
    const unknown = msg.insert(99, orderCells)
    expect(() => decoder.message(unknown, 0, unknown.length)).toThrow(new PgoutputError("pgoutput change of relation 99, which was never defined"))
    const relation = msg.relation(orders)
    expect(() => decoder.message(relation, 0, relation.length)).toThrow(/parseRelation and define/)
    expect(decoder.relation(99)).toBeUndefined()
  })

  it("a relation defined without a target: its changes are skipped (they still count in __seq, not in changes)", () => {
    const { relation, plans } = wide(20_003, 2)
    const decoder = new PgoutputDecoder({ batchRows: 1000, batchBytes: 1 << 20 })
    decoder.define(orders, undefined)
    decoder.define(relation, binaryTarget(plans))
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, XID),
      msg.insert(ORDERS, orderCells),
      msg.update(ORDERS, orderCells, { kind: "O", cells: orderCells }),
      msg.delete(ORDERS, "K", [int8(1n), null, null, null, null]),
      msg.insert(relation.oid, [text("a"), null]),
      msg.commit(LSN, END_LSN, COMMIT_MICROS),
      msg.begin(LSN + 0x100n, COMMIT_MICROS, XID + 1),
      msg.insert(ORDERS, orderCells),
      msg.commit(LSN + 0x100n, END_LSN + 0x100n, COMMIT_MICROS)
    )
    expect(shapes(events)).toEqual(["Commit", "Commit", "Rows(1)"])
    expect(allRows(events).map((row) => [row.__seq, row.c1])).toEqual([[3n, "a"]])
    expect(decoder.changes).toBe(1)
    expect(decoder.relation(ORDERS)).toEqual(orders)
  })

  it("Truncate: the truncated relations' rows so far are handed over before it", () => {
    const decoder = decoderWith()
    const events = feedThenFlush(
      decoder,
      msg.begin(LSN, COMMIT_MICROS, XID),
      msg.insert(ORDERS, orderCells),
      msg.truncate([ORDERS, 777]),
      msg.insert(ORDERS, orderCells),
      msg.commit(LSN, END_LSN, COMMIT_MICROS)
    )
    expect(shapes(events)).toEqual(["Rows(1)", "Truncate", "Commit", "Rows(1)"])
    expect(events[1]).toEqual({ _tag: "Truncate", oids: [ORDERS, 777] })
    expect(rowsOf(events[3])[0]!.__seq).toBe(1n)
  })

  it("Type, Origin and logical decoding Message are ignored", () => {
    const decoder = decoderWith()
    const type = new Wire().u8(0x59).i32(16_500).cstring("public").cstring("mood").done()
    const origin = new Wire().u8(0x4f).u64(LSN).cstring("elsewhere").done()
    const message = new Wire().u8(0x4d).u8(1).u64(LSN).cstring("prefix").i32(2).raw(utf8("hi")).done()
    const begin = msg.begin(LSN, COMMIT_MICROS, XID)
    const events = feedThenFlush(decoder, message, begin, origin, type, msg.insert(ORDERS, orderCells), msg.commit(LSN, END_LSN, COMMIT_MICROS))
    expect(shapes(events)).toEqual(["Commit", "Rows(1)"])
  })
})

describe("PgoutputDecoder: failures", () => {
  it("a value a sink refuses fails with a DecodeFailure naming the column (and keeping the hint)", () => {
    const decoder = decoderWith()
    feed(decoder, msg.begin(LSN, COMMIT_MICROS, XID))
    const short = msg.insert(ORDERS, [int8(1n), { b: new Uint8Array([0, 0, 7]) }, null, null, null])
    const failure = (() => {
      try {
        decoder.message(short, 0, short.length)
      } catch (cause) {
        return cause
      }
    })()
    expect(failure).toBeInstanceOf(DecodeFailure)
    expect((failure as DecodeFailure).message).toBe('column "n" of public.orders (int4 → int32): unexpected binary int4 value of 3 bytes')

    const decoder2 = decoderWith()
    feed(decoder2, msg.begin(LSN, COMMIT_MICROS, XID))
    // 12345678901.00 has 11 integer digits: numeric(12,2) holds 10.
    const tooBig = msg.insert(ORDERS, [int8(1n), null, null, numeric(2, false, 2, [123, 4567, 8901]), null])
    try {
      decoder2.message(tooBig, 0, tooBig.length)
      expect.unreachable()
    } catch (cause) {
      expect(cause).toBeInstanceOf(DecodeFailure)
      expect((cause as DecodeFailure).message).toMatch(
        /^column "amount" of public\.orders \(numeric\(12,2\) → decimal\(12,2\)\): value .* does not fit decimal\(12,2\)$/
      )
      expect((cause as DecodeFailure).hint).toBe("raise the precision in the column's type override")
    }
  })

  it("malformed or out-of-order messages throw a PgoutputError", () => {
    const cases: Array<[string, ReadonlyArray<Uint8Array>, RegExp]> = [
      ["a tuple of too few columns", [msg.begin(LSN, 0n, 1), msg.insert(ORDERS, [int8(1n)])], /tuple of 1 columns for orders's 5/],
      ["a value running past the end", [msg.begin(LSN, 0n, 1), msg.insert(ORDERS, orderCells).subarray(0, 30)], /cut short/],
      ["bytes after the tuple", [msg.begin(LSN, 0n, 1), new Uint8Array([...msg.insert(ORDERS, orderCells), 0])], /1 bytes after the tuple/],
      ["an unknown value kind", [msg.begin(LSN, 0n, 1), msg.insert(ORDERS, orderCells).map((byte, i) => (i === 8 ? 0x78 : byte))], /value kind 'x'/],
      ["an Update without a new tuple", [msg.begin(LSN, 0n, 1), new Wire().u8(0x55).i32(ORDERS).u8(0x58).done()], /Update without its new tuple/],
      [
        "a Delete without an old tuple",
        [msg.begin(LSN, 0n, 1), msg.insert(ORDERS, orderCells).map((byte, i) => (i === 0 ? 0x44 : byte))],
        /Delete without its old tuple/
      ],
      ["a change outside a transaction", [msg.insert(ORDERS, orderCells)], /outside a transaction/],
      ["a Commit outside a transaction", [msg.commit(LSN, END_LSN, 0n)], /Commit outside a transaction/],
      ["a Begin inside a transaction", [msg.begin(LSN, 0n, 1), msg.begin(LSN, 0n, 2)], /Begin inside a transaction/],
      ["a cut Begin", [msg.begin(LSN, 0n, 1).subarray(0, 20)], /Begin message too short/],
      ["a streamed transaction (protocol version 2)", [new Wire().u8(0x53).i32(1).u8(1).done()], /unknown pgoutput message 'S'/]
    ]
    for (const [what, messages, error] of cases) {
      let failure: unknown
      try {
        feed(decoderWith(), ...messages)
      } catch (cause) {
        failure = cause
      }
      expect(failure, what).toBeInstanceOf(PgoutputError)
      expect((failure as Error).message, what).toMatch(error)
    }
  })

  it("define() refuses a target whose sinks or schema do not match the relation's columns", () => {
    const decoder = new PgoutputDecoder({ batchRows: 10, batchBytes: 1000 })
    const target = binaryTarget(ORDER_PLANS)
    expect(() => decoder.define(orders, { ...target, sinks: target.sinks.slice(1) })).toThrow(/4 sinks and 11 schema columns for 5 relation columns/)
    expect(() => decoder.define(orders, { ...target, schema: { columns: target.schema.columns.slice(1) } })).toThrow(/5 sinks and 10 schema columns/)
  })
})
