import type { BatchSchema, Column, ColumnData } from "../batch.js"
import { BinaryBuilder, ListBuilder, NumberBuilder } from "./builders.js"

/**
 * The change metadata columns every change row starts with, before the table's own columns:
 *
 * | column        | type          | value                                                                          |
 * |---------------|---------------|--------------------------------------------------------------------------------|
 * | `__op`        | string        | `insert`, `update`, `delete`, or `snapshot` (a row of the first run's snapshot) |
 * | `__pos`       | string        | the transaction's position in the log (PostgreSQL: its commit LSN; snapshot: where the log starts) |
 * | `__seq`       | int64         | the change's 0-based ordinal in its transaction (snapshot: the row's in the snapshot) |
 * | `__commit_ts` | timestamptz   | the transaction's commit time (null for snapshot rows)                         |
 * | `__txid`      | int64         | the transaction's id (null for snapshot rows)                                  |
 * | `__unchanged` | list<string>  | the columns whose unchanged value the change did not carry (or null)           |
 *
 * A column named in `__unchanged` holds NULL in the row although the table's value is not NULL: the log did not
 * carry it (PostgreSQL: an unchanged TOASTed value under REPLICA IDENTITY DEFAULT), and it is the same as before.
 * Sources share these columns (a change-data-capture source of a plugin too); only the `sourceType`s of the position
 * and the transaction id are their own.
 */

/** The change columns of a source whose log positions and transaction ids have these source types. */
export const changeColumns = (sourceTypes: { readonly position: string; readonly txid: string }): ReadonlyArray<Column> => [
  { name: "__op", type: { kind: "string" }, sourceType: "text" },
  { name: "__pos", type: { kind: "string" }, sourceType: sourceTypes.position },
  { name: "__seq", type: { kind: "int64" }, sourceType: "int8" },
  { name: "__commit_ts", type: { kind: "timestamptz" }, sourceType: "timestamptz" },
  { name: "__txid", type: { kind: "int64" }, sourceType: sourceTypes.txid },
  { name: "__unchanged", type: { kind: "list", element: { kind: "string" } }, sourceType: "text[]" }
]

/**
 * The schema of a table's change rows: the change columns, then the table's columns. A table column named like a
 * change column (exactly: names are case-sensitive) is a problem to report, not a defect: the table is the user's.
 */
export const changeSchema = (
  changes: ReadonlyArray<Column>,
  columns: ReadonlyArray<Column>
): { readonly schema: BatchSchema } | { readonly problem: { readonly reason: string; readonly fix: string } } => {
  const clash = columns.find((column) => changes.some((change) => change.name === column.name))
  if (clash !== undefined) {
    return {
      problem: {
        reason: `column "${clash.name}" has the name of a change column (${changes.map((column) => column.name).join(", ")})`,
        fix: `rename the column in the table (ALTER TABLE … RENAME COLUMN "${clash.name}" TO …) or export it in another mode`
      }
    }
  }
  return { schema: { columns: [...changes, ...columns] } }
}

const ascii = (text: string): Uint8Array => Uint8Array.from(text, (char) => char.charCodeAt(0))

const OP_BYTES = { insert: ascii("insert"), update: ascii("update"), delete: ascii("delete"), snapshot: ascii("snapshot") }

export type ChangeOp = "insert" | "update" | "delete"

const TWO32 = 2 ** 32

/** Appends a safe integer to an int64 builder in two 32-bit halves (`push` would make a BigInt per value). */
const appendInt64 = (builder: NumberBuilder, value: number): void => {
  const offset = builder.slot() // first: it may replace `view`
  const hi = Math.floor(value / TWO32)
  builder.view.setUint32(offset, value - hi * TWO32, true)
  builder.view.setInt32(offset + 4, hi, true)
}

const appendBytes = (builder: BinaryBuilder, bytes: Uint8Array): void => {
  builder.reserve(bytes.byteLength)
  builder.data.set(bytes, builder.end)
  builder.commit(bytes.byteLength)
}

/**
 * The builders of the change columns of one batch, reused from batch to batch like field sinks (`finish`, then
 * `reset`). Appending allocates nothing per row: the op and position arrive as bytes.
 */
export class ChangeColumnsBuilder {
  private readonly op: BinaryBuilder
  private readonly pos: BinaryBuilder
  private readonly seq: NumberBuilder
  private readonly commitTs: NumberBuilder
  private readonly txid: NumberBuilder
  private readonly unchanged: ListBuilder<BinaryBuilder>
  /** `__unchanged`'s names before the current row's. */
  private namesBefore = 0

  /** `positionBytes`: the usual length of a position's text (the builder grows past it). */
  constructor(capacity: number, positionBytes: number) {
    this.op = new BinaryBuilder(capacity, 8)
    this.pos = new BinaryBuilder(capacity, positionBytes)
    this.seq = new NumberBuilder("int64", capacity)
    this.commitTs = new NumberBuilder("int64", capacity)
    this.txid = new NumberBuilder("int64", capacity)
    this.unchanged = new ListBuilder(new BinaryBuilder(16), capacity)
  }

  get length(): number {
    return this.op.length
  }

  /** Names a column of the row being appended in its `__unchanged` list (call before `appendChange`). */
  addUnchanged(name: Uint8Array): void {
    appendBytes(this.unchanged.child, name)
  }

  /**
   * Ends a change row. `position`: the bytes of the transaction's position text; `commitMicros`: µs
   * since 1970; `__unchanged` lists the names added since the previous row, null when none were.
   */
  appendChange(op: ChangeOp, position: Uint8Array, seq: number, commitMicros: number, txid: number): void {
    appendBytes(this.op, OP_BYTES[op])
    appendBytes(this.pos, position)
    appendInt64(this.seq, seq)
    appendInt64(this.commitTs, commitMicros)
    appendInt64(this.txid, txid)
    const names = this.unchanged.child.length
    if (names === this.namesBefore) this.unchanged.appendNull()
    else this.unchanged.endList()
    this.namesBefore = names
  }

  appendSnapshot(position: Uint8Array, seq: number): void {
    appendBytes(this.op, OP_BYTES.snapshot)
    appendBytes(this.pos, position)
    appendInt64(this.seq, seq)
    this.commitTs.appendNull()
    this.txid.appendNull()
    this.unchanged.appendNull()
  }

  /** The six columns, in `changeColumns` order, written into `into[0, 6)`. */
  finishInto(into: Array<ColumnData>): void {
    into[0] = this.op.finish()
    into[1] = this.pos.finish()
    into[2] = this.seq.finish()
    into[3] = this.commitTs.finish()
    into[4] = this.txid.finish()
    into[5] = this.unchanged.finish()
  }

  reset(): void {
    this.op.reset()
    this.pos.reset()
    this.seq.reset()
    this.commitTs.reset()
    this.txid.reset()
    this.unchanged.reset()
    this.namesBefore = 0
  }
}

/**
 * The change columns of `rows` snapshot rows (`__op` snapshot, `__pos` where the log starts as text bytes, `__seq`
 * from `firstSeq` on, the rest null), to put in front of a batch the batch read gave.
 */
export const snapshotChangeColumns = (rows: number, position: Uint8Array, firstSeq: number): ReadonlyArray<ColumnData> => {
  const builder = new ChangeColumnsBuilder(Math.max(1, rows), position.byteLength)
  for (let row = 0; row < rows; row++) builder.appendSnapshot(position, firstSeq + row)
  const columns: Array<ColumnData> = []
  builder.finishInto(columns)
  return columns
}
