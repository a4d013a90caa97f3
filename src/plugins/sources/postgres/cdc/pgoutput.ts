import { type Batch, batchFromColumns, type BatchSchema, type ColumnData, formatLogicalType } from "../../../../core/batch.js"
import { type FieldSink, int16At, int32At, uint32At } from "../binary-wire.js"
import { DecodeFailure } from "../decode.js"
import type { ChangeColumnsBuilder, ChangeOp } from "../../../../core/columns/change-columns.js"
import { CHANGE_COLUMNS, changeColumnsBuilder } from "./change-columns.js"
import { lsnAt, POSITION_TEXT_BYTES, writePositionText } from "./positions.js"
import { kindText, malformed, PgoutputError, type Relation } from "./relation.js"

export { parseRelation, PgoutputError, type Relation, type RelationColumn } from "./relation.js"

/**
 * The decoder of pgoutput messages (logical replication protocol version 1, values in binary or text) straight
 * into column builders: the rows of each relation go into its current batch — the change columns (change-columns.ts)
 * and the row image through the field sinks of binary-fields.ts (or text sinks) — with no JS object or string per
 * row or value. It is fed one message at a time, never a whole transaction: a batch is handed over once it holds
 * `batchRows` rows or `batchBytes` bytes, so a transaction of a million rows costs one batch of memory.
 *
 * Batches span transactions: a Commit does not cut them (a stream of one-row transactions would make one-row
 * batches, each a dozen buffers to allocate, finish and hand over: ~100× slower than full batches). A Commit event
 * says every row up to it has been decoded; the rows not yet in Rows events are in partial batches, which `flush()`
 * hands over. So `flush()` right after a Commit event (before the next message) makes that commit a boundary: every
 * row up to it is in the Rows events before, none after.
 *
 * Unchanged TOASTed values ('u' in a tuple) are never written as a plain NULL: the value is taken from the old tuple
 * of the same Update when it holds it (REPLICA IDENTITY FULL), otherwise the cell is NULL and the column is named in
 * the row's `__unchanged` list.
 *
 * After a throw the decoder is in an undefined state (a row may be half appended): the stream has failed.
 */

/**
 * How the rows of one relation are written: its batch schema (changeSchema of the table columns) and one field sink
 * maker per relation column, in relation column order.
 */
export interface ChangeTarget {
  readonly schema: BatchSchema
  readonly sinks: ReadonlyArray<(capacity: number) => FieldSink>
}

export type DecoderEvent =
  /** `batch.schema` is the relation's `ChangeTarget.schema`. */
  | { readonly _tag: "Rows"; readonly oid: number; readonly batch: Batch }
  /**
   * Every row of the transaction is decoded: in the Rows events before it, or in partial batches that the next cut or
   * `flush()` hands over. `endLsn` is where to restart after it.
   */
  | { readonly _tag: "Commit"; readonly commitLsn: number; readonly endLsn: number }
  /** The relations' rows changed before it (in its transaction) are in the Rows events before it. */
  | { readonly _tag: "Truncate"; readonly oids: ReadonlyArray<number> }

const BEGIN = 0x42 // B
const COMMIT = 0x43 // C
const RELATION = 0x52 // R
const INSERT = 0x49 // I
const UPDATE = 0x55 // U
const DELETE = 0x44 // D
const TRUNCATE = 0x54 // T
const TYPE = 0x59 // Y
const ORIGIN = 0x4f // O
const LOGICAL_MESSAGE = 0x4d // M

const NEW_TUPLE = 0x4e // N
const KEY_TUPLE = 0x4b // K
const OLD_TUPLE = 0x4f // O

const VALUE_NULL = 0x6e // n
const VALUE_UNCHANGED = 0x75 // u
const VALUE_TEXT = 0x74 // t
const VALUE_BINARY = 0x62 // b

const TWO32 = 2 ** 32
/** pgoutput's timestamps count µs from 2000-01-01. */
const PG_EPOCH_MICROS = 946_684_800_000_000

/**
 * Rows a relation's builders start with. Small: a publication may hold many relations that see few changes per run;
 * builders grow by doubling, and each reset sizes the next batch from the last.
 */
const INITIAL_ROWS = 64

/**
 * What a row costs besides its values' bytes, in the byte cap's count: the change columns (op and position text,
 * three int64, offsets) and 4 bytes per table column (an offset, or part of a fixed-width slot).
 */
const CHANGE_ROW_BYTES = 64
const COLUMN_BYTES = 4

const utf8Encoder = new TextEncoder()

/** One relation: how its rows are written (none when `target` is undefined) and its batch being built. */
class RelationState {
  rows = 0
  bytes = 0
  /** In the decoder's list of relations with rows since the last flush. */
  listed = false

  constructor(
    readonly relation: Relation,
    readonly target: ChangeTarget | undefined,
    readonly sinks: ReadonlyArray<FieldSink>,
    readonly changeColumns: ChangeColumnsBuilder | undefined,
    /** UTF-8 column names, for `__unchanged`. */
    readonly names: ReadonlyArray<Uint8Array>,
    readonly rowBytes: number
  ) {}
}

export class PgoutputDecoder {
  private readonly batchRows: number
  private readonly batchBytes: number
  private readonly relations = new Map<number, RelationState>()
  /** The relations with rows since the last flush: the batches `flush()` hands over. */
  private readonly pending: Array<RelationState> = []
  private events: Array<DecoderEvent> = []

  private transaction = false
  private transactionRows = 0
  private changeCount = 0
  /** The current transaction's `__pos` bytes, commit time (µs since 1970), id and next `__seq`. */
  private readonly position = new Uint8Array(POSITION_TEXT_BYTES)
  private commitMicros = 0
  private xid = 0
  private seq = 0

  /** Where an Update's old tuple's values are in the message (size -1: not there, 'n' or 'u'), by column. */
  private oldAt = new Int32Array(64)
  private oldSize = new Int32Array(64)

  constructor(options: { readonly batchRows: number; readonly batchBytes: number }) {
    this.batchRows = Math.max(1, options.batchRows)
    this.batchBytes = options.batchBytes
  }

  /** Between a Begin and its Commit. */
  get inTransaction(): boolean {
    return this.transaction
  }

  /** Rows written (of any relation with a target) since the current transaction's Begin; 0 outside a transaction. */
  get rowsInTransaction(): number {
    return this.transactionRows
  }

  /** Rows written so far (the changes of skipped relations not counted). */
  get changes(): number {
    return this.changeCount
  }

  /**
   * Sets (or replaces, after a schema change) how a relation's rows are written; `undefined`: its rows are skipped.
   * Hands over the relation's pending rows of the old shape first (a Rows event).
   */
  define(relation: Relation, target: ChangeTarget | undefined): void {
    const columns = relation.columns.length
    if (target !== undefined && (target.sinks.length !== columns || target.schema.columns.length !== CHANGE_COLUMNS.length + columns)) {
      throw new Error(
        `the target of ${relation.schema}.${relation.name} has ${target.sinks.length} sinks and ${target.schema.columns.length} ` +
          `schema columns for ${columns} relation columns (expected ${columns} and ${CHANGE_COLUMNS.length + columns})`
      )
    }
    const previous = this.relations.get(relation.oid)
    if (previous !== undefined) this.cut(previous)
    const capacity = Math.min(this.batchRows, INITIAL_ROWS)
    const changeColumns = target === undefined ? undefined : (previous?.changeColumns ?? changeColumnsBuilder(capacity))
    const sinks = target === undefined ? [] : target.sinks.map((make) => make(capacity))
    const names = target === undefined ? [] : relation.columns.map((column) => utf8Encoder.encode(column.name))
    this.relations.set(
      relation.oid,
      new RelationState(relation, target, sinks, changeColumns, names, CHANGE_ROW_BYTES + COLUMN_BYTES * columns)
    )
  }

  relation(oid: number): Relation | undefined {
    return this.relations.get(oid)?.relation
  }

  /**
   * Decodes one pgoutput message b[start, end): Begin, Commit, Insert, Update, Delete, Truncate; Type, Origin and
   * logical decoding Message are ignored. A Relation message goes through parseRelation + define (the caller plans
   * its columns first, which is async): this throws on one. A change of a relation never defined throws.
   */
  message(b: Uint8Array, start: number, end: number): void {
    switch (b[start]) {
      case BEGIN:
        return this.begin(b, start, end)
      case COMMIT:
        return this.commit(b, start, end)
      case INSERT: {
        const state = this.changeOf(b, start, end)
        const seq = this.seq++
        if (state.target === undefined) return
        if (b[start + 5] !== NEW_TUPLE) throw malformed(`Insert without its new tuple (${kindText(b[start + 5])})`)
        return this.append(state, "insert", b, start + 6, end, 0, seq)
      }
      case UPDATE: {
        const state = this.changeOf(b, start, end)
        const seq = this.seq++
        if (state.target === undefined) return
        let p = start + 5
        let oldColumns = 0
        if (b[p] === KEY_TUPLE || b[p] === OLD_TUPLE) {
          p = this.rememberOld(state, b, p + 1, end)
          oldColumns = state.sinks.length
        }
        if (b[p] !== NEW_TUPLE) throw malformed(`Update without its new tuple (${kindText(b[p])})`)
        return this.append(state, "update", b, p + 1, end, oldColumns, seq)
      }
      case DELETE: {
        const state = this.changeOf(b, start, end)
        const seq = this.seq++
        if (state.target === undefined) return
        // The image: the key ('K': the other columns are 'n') or the whole old row ('O').
        if (b[start + 5] !== KEY_TUPLE && b[start + 5] !== OLD_TUPLE) throw malformed(`Delete without its old tuple (${kindText(b[start + 5])})`)
        return this.append(state, "delete", b, start + 6, end, 0, seq)
      }
      case TRUNCATE:
        return this.truncate(b, start, end)
      case TYPE:
      case ORIGIN:
      case LOGICAL_MESSAGE:
        return
      case RELATION:
        throw new PgoutputError("a Relation message goes through parseRelation and define, not message")
      default:
        throw new PgoutputError(`unknown pgoutput message ${kindText(b[start])} (the decoder reads protocol version 1)`)
    }
  }

  /** The events since the last take, in order (the array is handed over, not copied). */
  take(): Array<DecoderEvent> {
    const events = this.events
    this.events = []
    return events
  }

  /** Hands over every relation's partial batch as Rows events. */
  flush(): void {
    for (const state of this.pending) {
      this.cut(state)
      state.listed = false
    }
    this.pending.length = 0
  }

  private begin(b: Uint8Array, start: number, end: number): void {
    if (end - start < 21) throw malformed("Begin message too short")
    if (this.transaction) throw new PgoutputError("pgoutput Begin inside a transaction")
    writePositionText(this.position, 0, lsnAt(b, start + 1))
    this.commitMicros = int32At(b, start + 9) * TWO32 + uint32At(b, start + 13) + PG_EPOCH_MICROS
    this.xid = uint32At(b, start + 17)
    this.seq = 0
    this.transactionRows = 0
    this.transaction = true
  }

  private commit(b: Uint8Array, start: number, end: number): void {
    if (end - start < 26) throw malformed("Commit message too short")
    if (!this.transaction) throw new PgoutputError("pgoutput Commit outside a transaction")
    this.events.push({ _tag: "Commit", commitLsn: lsnAt(b, start + 2), endLsn: lsnAt(b, start + 10) })
    this.transaction = false
    this.transactionRows = 0
  }

  private truncate(b: Uint8Array, start: number, end: number): void {
    if (end - start < 6) throw malformed("Truncate message too short")
    const count = int32At(b, start + 1)
    if (count < 0 || end - start < 6 + 4 * count) throw malformed("Truncate message too short")
    const oids: Array<number> = []
    for (let i = 0; i < count; i++) {
      const oid = uint32At(b, start + 6 + 4 * i)
      oids.push(oid)
      const state = this.relations.get(oid)
      if (state !== undefined) this.cut(state)
    }
    this.events.push({ _tag: "Truncate", oids })
  }

  /** The relation of an Insert, Update or Delete at b[start]. */
  private changeOf(b: Uint8Array, start: number, end: number): RelationState {
    if (end - start < 6) throw malformed(`${kindText(b[start])} message too short`)
    if (!this.transaction) throw new PgoutputError(`pgoutput ${kindText(b[start])} change outside a transaction`)
    const oid = uint32At(b, start + 1)
    const state = this.relations.get(oid)
    if (state === undefined) throw new PgoutputError(`pgoutput change of relation ${oid}, which was never defined`)
    return state
  }

  /** Notes where the old tuple's values at b[p…] are (for 'u' in the new tuple); returns where the tuple ends. */
  private rememberOld(state: RelationState, b: Uint8Array, p: number, end: number): number {
    const columns = state.sinks.length
    if (end - p < 2) throw malformed("old tuple cut short")
    const count = int16At(b, p)
    if (count !== columns) throw malformed(`old tuple of ${count} columns for ${state.relation.name}'s ${columns}`)
    p += 2
    if (this.oldAt.length < count) {
      this.oldAt = new Int32Array(count)
      this.oldSize = new Int32Array(count)
    }
    for (let c = 0; c < count; c++) {
      if (p >= end) throw malformed("old tuple cut short")
      const kind = b[p]
      if (kind === VALUE_BINARY || kind === VALUE_TEXT) {
        if (end - p < 5) throw malformed("old tuple cut short")
        const size = int32At(b, p + 1)
        p += 5
        if (size < 0 || end - p < size) throw malformed("old tuple cut short")
        this.oldAt[c] = p
        this.oldSize[c] = size
        p += size
      } else if (kind === VALUE_NULL || kind === VALUE_UNCHANGED) {
        this.oldSize[c] = -1
        p++
      } else {
        throw malformed(`unknown tuple value kind ${kindText(kind)}`)
      }
    }
    return p
  }

  /**
   * Appends the row whose tuple is at b[p, end) to the relation's batch; a 'u' value of column c < `oldColumns`
   * comes from the remembered old tuple when that has it.
   */
  private append(state: RelationState, op: ChangeOp, b: Uint8Array, p: number, end: number, oldColumns: number, seq: number): void {
    const sinks = state.sinks
    const changeColumns = state.changeColumns!
    if (end - p < 2) throw malformed("tuple cut short")
    const count = int16At(b, p)
    if (count !== sinks.length) throw malformed(`tuple of ${count} columns for ${state.relation.name}'s ${sinks.length}`)
    p += 2
    let bytes = state.rowBytes
    let c = 0
    try {
      for (; c < count; c++) {
        if (p >= end) throw malformed("tuple cut short")
        const kind = b[p]
        if (kind === VALUE_BINARY || kind === VALUE_TEXT) {
          if (end - p < 5) throw malformed("tuple cut short")
          const size = int32At(b, p + 1)
          p += 5
          if (size < 0 || end - p < size) throw malformed("tuple cut short")
          sinks[c]!.value(b, p, size)
          p += size
          bytes += size
        } else if (kind === VALUE_NULL) {
          sinks[c]!.nul()
          p++
        } else if (kind === VALUE_UNCHANGED) {
          p++
          const size = c < oldColumns ? this.oldSize[c]! : -1
          if (size >= 0) {
            sinks[c]!.value(b, this.oldAt[c]!, size)
            bytes += size
          } else {
            sinks[c]!.nul()
            changeColumns.addUnchanged(state.names[c]!)
          }
        } else {
          throw malformed(`unknown tuple value kind ${kindText(kind)}`)
        }
      }
    } catch (cause) {
      throw cause instanceof PgoutputError ? cause : this.columnFailure(state, c, cause)
    }
    if (p !== end) throw malformed(`${end - p} bytes after the tuple`)
    changeColumns.appendChange(op, this.position, seq, this.commitMicros, this.xid)
    this.changeCount++
    this.transactionRows++
    if (!state.listed) {
      state.listed = true
      this.pending.push(state)
    }
    state.rows++
    state.bytes += bytes
    if (state.rows >= this.batchRows || state.bytes >= this.batchBytes) this.cut(state)
  }

  /** `column "x" of public.t (numeric(12,2) → decimal(12,2)): …`, as binary-fields.ts' columnFailure words it. */
  private columnFailure(state: RelationState, column: number, cause: unknown): DecodeFailure {
    const { name, type, sourceType } = state.target!.schema.columns[CHANGE_COLUMNS.length + column]!
    const types = sourceType === undefined ? formatLogicalType(type) : `${sourceType} → ${formatLogicalType(type)}`
    const reason = cause instanceof Error ? cause.message : String(cause)
    return new DecodeFailure(
      `column "${name}" of ${state.relation.schema}.${state.relation.name} (${types}): ${reason}`,
      cause instanceof DecodeFailure ? cause.hint : undefined
    )
  }

  /** Hands over the relation's batch (if it has rows) and starts the next with its builders reset. */
  private cut(state: RelationState): void {
    if (state.rows === 0) return
    const sinks = state.sinks
    const changeColumns = state.changeColumns!
    const columns = new Array<ColumnData>(CHANGE_COLUMNS.length + sinks.length)
    changeColumns.finishInto(columns)
    for (let c = 0; c < sinks.length; c++) columns[CHANGE_COLUMNS.length + c] = sinks[c]!.finish()
    changeColumns.reset()
    for (const sink of sinks) sink.reset()
    state.rows = 0
    state.bytes = 0
    this.events.push({ _tag: "Rows", oid: state.relation.oid, batch: batchFromColumns(state.target!.schema, columns) })
  }
}
