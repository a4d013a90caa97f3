import type { ColumnData } from "../../../core/columns/data.js"
import { DecodeFailure } from "./decode.js"
import type { FieldSink } from "./binary-fields.js"

/**
 * A batch is cut at `batch_size` rows or once its rows' wire bytes reach this many, whichever comes first: wide rows
 * (kilobytes of text or JSON each) would otherwise make a 10 000-row batch hold tens of megabytes. The decoded
 * buffers are about the size of the wire bytes (a field's 4-byte length becomes its offset). 4 MiB matches the
 * default Parquet row group's byte budget; 8 MiB cost 36–67 MB more peak RSS on rows of 1–4 KiB at about the same
 * speed (bench/LOG.md), and rows under ~400 bytes reach `batch_size` first either way.
 */
export const BATCH_BYTES = 4 * 1024 * 1024

const SIGNATURE = [0x50, 0x47, 0x43, 0x4f, 0x50, 0x59, 0x0a, 0xff, 0x0d, 0x0a, 0x00] // PGCOPY\n\377\r\n\0

// What the next `need` bytes are.
const HEADER = 0
const EXTENSION = 1
const TUPLE = 2
const LENGTH = 3
const DATA = 4
const TRAILER = 5

/** The result ended (CopyDone) without the binary trailer: rows may be missing. */
export class TruncatedCopy extends Error {
  constructor() {
    super("the result ended before its last row was read")
  }
}

export interface BinaryCopyOptions {
  /** Makes one sink per result column (`capacity` rows per batch expected); they are reset for every batch. */
  readonly sinks: (capacity: number) => Array<FieldSink>
  readonly batchRows: number
  readonly batchBytes?: number
  /** Receives each full batch's columns, in result-column order. */
  readonly onBatch: (columns: Array<ColumnData>) => void
  /** Turns a value's failure into the error thrown (adds the column); default: rethrow. */
  readonly failure?: (column: number, cause: unknown) => unknown
}

/**
 * Decodes PostgreSQL's binary COPY stream (header, then per tuple an int16 field count and per field an int32 length
 * — -1 for NULL — and the value's bytes, then the -1 trailer) into column sinks, fed with CopyData payloads cut
 * anywhere. A field split across payloads is gathered in a small carry buffer; every other field is decoded in
 * place. Full batches go to `onBatch` at tuple boundaries; `end()` returns the last, partial one.
 */
export class BinaryCopyDecoder {
  private phase = HEADER
  private need = 19
  private column = 0
  private carry = new Uint8Array(64)
  private carried = 0
  private readonly sinks: Array<FieldSink>
  private rows = 0
  private bytes = 0
  private readonly columns: number
  private readonly batchBytes: number

  constructor(private readonly options: BinaryCopyOptions) {
    this.sinks = options.sinks(Math.max(1, Math.min(options.batchRows, 16384)))
    this.columns = this.sinks.length
    this.batchBytes = options.batchBytes ?? BATCH_BYTES
  }

  /** Rows decoded into the batch being built. */
  get pendingRows(): number {
    return this.rows
  }

  /** Decodes `chunk[start, end)` (all of it by default). */
  push(chunk: Uint8Array, start = 0, end = chunk.byteLength): void {
    let pos = start
    while (pos < end || (this.phase === DATA && this.need === 0)) {
      if (this.phase === TUPLE && this.carried === 0) pos = this.tuples(chunk, pos, end)
      const need = this.need
      if (this.carried === 0 && end - pos >= need) {
        this.step(chunk, pos)
        pos += need
        continue
      }
      // The chunk ended where a field or tuple does: nothing to carry. (PostgreSQL sends a row per CopyData
      // message, so this is every row; a view of its zero bytes made a wrapper per row for the collector.)
      if (pos === end) return
      if (this.carry.byteLength < need) {
        const next = new Uint8Array(Math.max(need, this.carry.byteLength * 2))
        next.set(this.carry.subarray(0, this.carried))
        this.carry = next
      }
      const take = Math.min(need - this.carried, end - pos)
      this.carry.set(chunk.subarray(pos, pos + take), this.carried)
      this.carried += take
      pos += take
      if (this.carried < need) return
      this.carried = 0
      this.step(this.carry, 0)
    }
  }

  /**
   * The last batch's columns, or none when the rows ended with the batch before; fails unless the stream ended with
   * the binary trailer. Without rows the sinks are left as they are — fresh, sized for a batch — for the next
   * statement that reuses them (result.ts reads a chunk or page in pieces, each ending this way when its rows fill
   * whole batches).
   */
  end(): Array<ColumnData> {
    if (this.phase !== TRAILER || this.carried !== 0) throw new TruncatedCopy()
    return this.rows === 0 ? [] : this.sinks.map((sink) => sink.finish())
  }

  // Each sink starts the next batch with buffers sized from this one: a batch's buffers are allocated about once.
  private cut(): Array<ColumnData> {
    const columns = this.sinks.map((sink) => sink.finish())
    for (const sink of this.sinks) sink.reset()
    this.rows = 0
    this.bytes = 0
    return columns
  }

  private endTuple(): void {
    this.phase = TUPLE
    this.need = 2
    this.rows++
    this.bytes += 2
    if (this.rows >= this.options.batchRows || this.bytes >= this.batchBytes) this.options.onBatch(this.cut())
  }

  private nextField(): void {
    if (++this.column === this.columns) this.endTuple()
    else {
      this.phase = LENGTH
      this.need = 4
    }
  }

  /**
   * The fast path of `push`, from a tuple's start in `b[…end)` with nothing carried: decodes whole tuples in place, without
   * the per-field phases. Returns where it stopped: at a tuple start (fewer than 2 bytes left, or a field count other
   * than the columns': the trailer or an error, left to `step`), or inside a tuple cut by the chunk's end, with the
   * phase set as `step` would have left it there.
   */
  private tuples(b: Uint8Array, pos: number, end: number): number {
    const columns = this.columns
    const sinks = this.sinks
    while (end - pos >= 2 && (((b[pos]! << 24) | (b[pos + 1]! << 16)) >> 16) === columns) {
      let p = pos + 2
      for (let c = 0; c < columns; c++) {
        if (end - p < 4) return this.cutInside(pos, p, c, LENGTH, 4)
        const size = (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!
        p += 4
        const sink = sinks[c]!
        if (size === -1) {
          try {
            sink.nul()
          } catch (cause) {
            throw this.failed(c, cause)
          }
          continue
        }
        if (size < 0) throw new DecodeFailure(`malformed binary COPY data (field length ${size})`)
        if (end - p < size) return this.cutInside(pos, p, c, DATA, size)
        try {
          sink.value(b, p, size)
        } catch (cause) {
          throw this.failed(c, cause)
        }
        p += size
      }
      this.bytes += p - pos
      this.rows++
      pos = p
      if (this.rows >= this.options.batchRows || this.bytes >= this.batchBytes) this.options.onBatch(this.cut())
    }
    return pos
  }

  /** A tuple begun at `start` is cut at `at`, before column `column`'s length (LENGTH) or value (DATA, `need` bytes). */
  private cutInside(start: number, at: number, column: number, phase: number, need: number): number {
    // `endTuple` counts the field count's 2 bytes.
    this.bytes += at - start - 2
    this.column = column
    this.phase = phase
    this.need = need
    return at
  }

  private failed(column: number, cause: unknown): unknown {
    return this.options.failure === undefined ? cause : this.options.failure(column, cause)
  }

  /** Consumes `need` bytes at `b[at…]` for the current phase. */
  private step(b: Uint8Array, at: number): void {
    switch (this.phase) {
      case LENGTH: {
        const size = (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
        this.bytes += 4
        if (size === -1) {
          this.field(b, at, -1)
          this.nextField()
        } else if (size < 0) {
          throw new DecodeFailure(`malformed binary COPY data (field length ${size})`)
        } else {
          this.phase = DATA
          this.need = size
        }
        return
      }
      case DATA:
        this.bytes += this.need
        this.field(b, at, this.need)
        this.nextField()
        return
      case TUPLE: {
        const count = ((b[at]! << 24) | (b[at + 1]! << 16)) >> 16
        if (count === -1) {
          this.phase = TRAILER
          this.need = 0
          return
        }
        if (count !== this.columns) {
          throw new DecodeFailure(`malformed binary COPY data (a row of ${count} fields, expected ${this.columns})`)
        }
        this.column = 0
        this.phase = LENGTH
        this.need = 4
        return
      }
      case HEADER: {
        for (let i = 0; i < SIGNATURE.length; i++) {
          if (b[at + i] !== SIGNATURE[i]) throw new DecodeFailure("malformed binary COPY data (no PGCOPY signature)")
        }
        const extension = (b[at + 15]! << 24) | (b[at + 16]! << 16) | (b[at + 17]! << 8) | b[at + 18]!
        this.phase = extension > 0 ? EXTENSION : TUPLE
        this.need = extension > 0 ? extension : 2
        return
      }
      case EXTENSION:
        this.phase = TUPLE
        this.need = 2
        return
      case TRAILER:
        throw new DecodeFailure("malformed binary COPY data (bytes after the trailer)")
    }
  }

  private field(b: Uint8Array, at: number, size: number): void {
    const sink = this.sinks[this.column]!
    try {
      if (size === -1) sink.nul()
      else sink.value(b, at, size)
    } catch (cause) {
      throw this.failed(this.column, cause)
    }
  }
}
