/**
 * A streaming decoder of pgoutput messages (protocol version 1, with or without `binary 'true'`) straight into
 * Rivet's column sinks — the prototype of Rivet's own CDC decoder, used by bench/cdc/consume.ts.
 *
 * It is fed one pgoutput message at a time (the payload of one XLogData, itself one CopyData), never a whole
 * transaction: rows go into the current batch of their relation and a batch is handed over once it holds
 * `batchRows` rows, so a 1M-row transaction costs one batch of memory. Each row carries the change's metadata
 * (__op, __pos = the transaction's commit LSN, __seq = its ordinal in the transaction, __commit_ts, __txid) and the
 * row image (the new tuple for I/U, the key or old tuple for D).
 *
 * Unchanged TOAST values ('u' in TupleData) are never written as NULL without a mark: the value is taken from the
 * old tuple of the same message when the table has REPLICA IDENTITY FULL (the old tuple is then complete), and
 * otherwise the row's `unchanged` mask says which columns are not in the image (the cell is NULL with the mark).
 */
import type { ColumnData } from "../../src/core/columns/data.js"
import type { FieldSink } from "../../src/plugins/sources/postgres/binary-wire.js"

export const OP_INSERT = 0x49 // I
export const OP_UPDATE = 0x55 // U
export const OP_DELETE = 0x44 // D

const TWO32 = 2 ** 32

/** An LSN as a number (exact below 2^53 bytes of WAL, i.e. 8 PiB). */
export const lsnAt = (b: Uint8Array, at: number): number =>
  ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) * TWO32 +
  (((b[at + 4]! << 24) | (b[at + 5]! << 16) | (b[at + 6]! << 8) | b[at + 7]!) >>> 0)

export const formatLsn = (lsn: number): string =>
  `${Math.floor(lsn / TWO32).toString(16).toUpperCase()}/${(lsn % TWO32).toString(16).toUpperCase()}`

export const parseLsn = (text: string): number => {
  const [hi, lo] = text.split("/")
  return parseInt(hi!, 16) * TWO32 + parseInt(lo!, 16)
}

const uint32At = (b: Uint8Array, at: number): number =>
  ((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0
const int32At = (b: Uint8Array, at: number): number =>
  (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
const int16At = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16)) >> 16
/** A signed int64 that fits a double exactly (µs timestamps do). */
const int64NumberAt = (b: Uint8Array, at: number): number => int32At(b, at) * TWO32 + uint32At(b, at + 4)

const utf8 = new TextDecoder()
const cstring = (b: Uint8Array, at: number): [string, number] => {
  let end = at
  while (b[end] !== 0) end++
  return [utf8.decode(b.subarray(at, end)), end + 1]
}

export interface RelationColumn {
  readonly name: string
  readonly type: number
  readonly typmod: number
  readonly key: boolean
}

export interface Relation {
  readonly oid: number
  readonly schema: string
  readonly name: string
  /** d(efault), n(othing), f(ull), i(ndex). */
  readonly replicaIdentity: string
  readonly columns: ReadonlyArray<RelationColumn>
}

/** The metadata columns of a batch, `rows` long. */
export interface ChangeMeta {
  readonly op: Uint8Array
  readonly pos: Float64Array
  readonly seq: Float64Array
  /** µs since 2000-01-01 UTC, as PostgreSQL sends it. */
  readonly commitTs: Float64Array
  readonly txid: Uint32Array
  /** Per row, a bitmask of the columns (< 32 here) whose unchanged TOAST value is not in the image. */
  readonly unchanged: Uint32Array
}

export interface ChangeBatch {
  readonly relation: Relation
  readonly rows: number
  readonly meta: ChangeMeta
  readonly columns: ReadonlyArray<ColumnData>
}

export interface DecoderHandler {
  /** The sinks of a relation's columns (called at every Relation message: a schema change gives new ones). */
  readonly sinks: (relation: Relation, capacity: number) => Array<FieldSink>
  readonly batch: (batch: ChangeBatch) => void
  /** A transaction ended: every row before it has been offered; `endLsn` is the position to publish after it. */
  readonly commit: (commitLsn: number, endLsn: number) => void
  readonly truncate?: (relations: ReadonlyArray<Relation>) => void
}

const metaOf = (capacity: number): ChangeMeta => ({
  op: new Uint8Array(capacity),
  pos: new Float64Array(capacity),
  seq: new Float64Array(capacity),
  commitTs: new Float64Array(capacity),
  txid: new Uint32Array(capacity),
  unchanged: new Uint32Array(capacity)
})

class RelationState {
  rows = 0
  meta: ChangeMeta
  constructor(
    readonly relation: Relation,
    readonly sinks: Array<FieldSink>,
    readonly capacity: number
  ) {
    this.meta = metaOf(capacity)
  }
}

export class PgoutputDecoder {
  private readonly relations = new Map<number, RelationState>()
  inTransaction = false
  private finalLsn = 0
  private commitTs = 0
  private xid = 0
  private seq = 0
  /** Changes decoded (rows appended). */
  changes = 0
  unchangedToast = 0
  // Where the old tuple's fields of the current message are (for 'u' in the new tuple).
  private oldAt = new Int32Array(64)
  private oldSize = new Int32Array(64)
  private oldCount = 0

  constructor(
    private readonly handler: DecoderHandler,
    private readonly batchRows = 10_000
  ) {}

  /** Decodes one pgoutput message at `b[start, end)` (a message is whole: `end` is for the caller's framing). */
  message(b: Uint8Array, start: number, _end: number): void {
    switch (b[start]) {
      case 0x42: // Begin: final LSN, commit timestamp, xid
        this.finalLsn = lsnAt(b, start + 1)
        this.commitTs = int64NumberAt(b, start + 9)
        this.xid = uint32At(b, start + 17)
        this.seq = 0
        this.inTransaction = true
        return
      case 0x43: // Commit: flags, commit LSN, end LSN, timestamp
        this.inTransaction = false
        this.handler.commit(lsnAt(b, start + 2), lsnAt(b, start + 10))
        return
      case 0x52:
        this.relation(b, start + 1)
        return
      case 0x49: {
        // Insert: relation, 'N', tuple
        const state = this.stateOf(b, start + 1)
        this.oldCount = 0
        this.row(state, OP_INSERT, b, start + 6)
        return
      }
      case 0x55: {
        // Update: relation, ['K' | 'O' tuple], 'N' tuple
        const state = this.stateOf(b, start + 1)
        let p = start + 5
        this.oldCount = 0
        if (b[p] === 0x4b || b[p] === 0x4f) p = this.remember(b, p + 1, b[p] === 0x4f)
        if (b[p] !== 0x4e) throw new Error(`malformed pgoutput Update (no new tuple at ${p - start})`)
        this.row(state, OP_UPDATE, b, p + 1)
        return
      }
      case 0x44: {
        // Delete: relation, 'K' | 'O' tuple (the row image: the key, or the whole old row)
        const state = this.stateOf(b, start + 1)
        this.oldCount = 0
        this.row(state, OP_DELETE, b, start + 6)
        return
      }
      case 0x54: {
        // Truncate: count, options, relation OIDs
        const count = int32At(b, start + 1)
        const relations: Array<Relation> = []
        for (let i = 0; i < count; i++) {
          const state = this.relations.get(uint32At(b, start + 6 + 4 * i))
          if (state !== undefined) relations.push(state.relation)
        }
        this.handler.truncate?.(relations)
        return
      }
      case 0x59: // Type, Origin, logical Message: nothing to write
      case 0x4f:
      case 0x4d:
        return
      default:
        throw new Error(`unknown pgoutput message '${String.fromCharCode(b[start]!)}'`)
    }
  }

  /** Hands over every relation's partial batch (at the end of a run, or before a position is published). */
  flush(): void {
    for (const state of this.relations.values()) this.cut(state)
  }

  private stateOf(b: Uint8Array, at: number): RelationState {
    const state = this.relations.get(uint32At(b, at))
    if (state === undefined) throw new Error(`pgoutput change of relation ${uint32At(b, at)} before its Relation message`)
    return state
  }

  private relation(b: Uint8Array, at: number): void {
    const oid = uint32At(b, at)
    let p = at + 4
    const [schema, afterSchema] = cstring(b, p)
    const [name, afterName] = cstring(b, afterSchema)
    p = afterName
    const replicaIdentity = String.fromCharCode(b[p]!)
    const count = int16At(b, p + 1)
    p += 3
    const columns: Array<RelationColumn> = []
    for (let i = 0; i < count; i++) {
      const key = (b[p]! & 1) === 1
      const [columnName, next] = cstring(b, p + 1)
      columns.push({ name: columnName, key, type: uint32At(b, next), typmod: int32At(b, next + 4) })
      p = next + 8
    }
    // A Relation message comes before the first change of a relation in a session and again after its schema
    // changed: the rows of the old shape are handed over before the new sinks take the next ones.
    const previous = this.relations.get(oid)
    if (previous !== undefined) this.cut(previous)
    const relation: Relation = { oid, schema: schema === "" ? "pg_catalog" : schema, name, replicaIdentity, columns }
    this.relations.set(oid, new RelationState(relation, this.handler.sinks(relation, this.batchRows), this.batchRows))
  }

  /** Notes where the old tuple's fields are; returns the position after it. */
  private remember(b: Uint8Array, p: number, keep: boolean): number {
    const count = int16At(b, p)
    p += 2
    if (keep && this.oldAt.length < count) {
      this.oldAt = new Int32Array(count)
      this.oldSize = new Int32Array(count)
    }
    for (let c = 0; c < count; c++) {
      const kind = b[p]!
      if (kind === 0x62 || kind === 0x74) {
        const size = int32At(b, p + 1)
        if (keep) {
          this.oldAt[c] = p + 5
          this.oldSize[c] = size
        }
        p += 5 + size
      } else {
        if (keep) this.oldSize[c] = kind === 0x6e ? -1 : -2
        p += 1
      }
    }
    this.oldCount = keep ? count : 0
    return p
  }

  private row(state: RelationState, op: number, b: Uint8Array, p: number): void {
    const sinks = state.sinks
    const count = int16At(b, p)
    p += 2
    if (count !== sinks.length) throw new Error(`pgoutput tuple of ${count} columns for a relation of ${sinks.length}`)
    const r = state.rows
    const meta = state.meta
    let unchanged = 0
    for (let c = 0; c < count; c++) {
      const kind = b[p]!
      const sink = sinks[c]!
      if (kind === 0x62 || kind === 0x74) {
        const size = int32At(b, p + 1)
        sink.value(b, p + 5, size)
        p += 5 + size
        continue
      }
      p += 1
      if (kind === 0x6e) {
        sink.nul()
      } else if (kind === 0x75) {
        // Unchanged TOAST: the old tuple has it with REPLICA IDENTITY FULL; otherwise the image lacks it.
        if (c < this.oldCount && this.oldSize[c]! >= 0) sink.value(b, this.oldAt[c]!, this.oldSize[c]!)
        else {
          sink.nul()
          unchanged |= 1 << (c & 31)
          this.unchangedToast++
        }
      } else {
        throw new Error(`unknown pgoutput TupleData kind '${String.fromCharCode(kind)}'`)
      }
    }
    meta.op[r] = op
    meta.pos[r] = this.finalLsn
    meta.seq[r] = this.seq++
    meta.commitTs[r] = this.commitTs
    meta.txid[r] = this.xid
    meta.unchanged[r] = unchanged
    this.changes++
    if (++state.rows === state.capacity) this.cut(state)
  }

  private cut(state: RelationState): void {
    if (state.rows === 0) return
    const columns = state.sinks.map((sink) => sink.finish())
    for (const sink of state.sinks) sink.reset()
    const batch: ChangeBatch = { relation: state.relation, rows: state.rows, meta: state.meta, columns }
    state.meta = metaOf(state.capacity)
    state.rows = 0
    this.handler.batch(batch)
  }
}
