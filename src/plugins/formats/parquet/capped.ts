import type { Batch } from "../../../core/batch.js"
import { sliceByteLength } from "./columns.js"
import type { RowGroupMeta } from "./writer/metadata.js"

/**
 * Under `max_file_size` a row group is at most this share of the cap (encoded), so groups get smaller with the cap
 * and the last group of a part can be sized to the room left.
 */
export const GROUPS_PER_CAP = 4
/** A group's rows are chosen to fill this share of the room they are meant for: estimates are from earlier groups. */
const FILL = 0.9
/** Times a group that did not fit is encoded again with fewer rows before the part is left to end. */
const RETRIES = 2

/** What `cappedGroups` needs of a part encoder. */
export interface CappedPartState {
  /** The size of the footer (with its length and magic) for these row groups. */
  readonly footerSize: (groups: ReadonlyArray<RowGroupMeta>) => number
  /** The part's row groups so far. */
  readonly rowGroups: ReadonlyArray<RowGroupMeta>
  readonly settings: { readonly rowGroupSize: number; readonly rowGroupBytes: number }
  /** The part's bytes so far: handed on, and encoded but not yet handed on. */
  readonly partBytes: () => number
  /** Encodes rows `[from, to)` as a row group at the end of the part; returns its metadata and encoded size. */
  readonly encode: (
    batch: Batch,
    words: ReadonlyArray<Uint32Array | undefined>,
    from: number,
    to: number
  ) => { readonly group: RowGroupMeta; readonly bytes: number }
  /** Records the group just encoded. */
  readonly commit: (group: RowGroupMeta) => void
  /** Removes the group just encoded (its last `bytes` bytes). */
  readonly rollBack: (bytes: number) => void
}

const rawBytes = (batch: Batch, from: number, to: number): number => {
  let bytes = 0
  for (const data of batch.columns) bytes += sliceByteLength(data, from, to)
  return bytes
}

/**
 * Row groups of a part under a cap: each group is encoded from the batch's rows, and kept only if the part with it
 * and the footer stays within `maxBytes`; a group that does not fit is encoded again with fewer rows, or left (with
 * the rows after it) to the next part. A part's first group keeps at least one row. Groups never span batches, so
 * nothing waits past the call and `finish` adds only the footer. Returns the rows written from `from`.
 */
export const cappedGroups = (state: CappedPartState) => {
  // Encoded bytes per byte of the rows in the batches' buffers, from the last group encoded.
  let ratio = 1
  return (batch: Batch, words: ReadonlyArray<Uint32Array | undefined>, from: number, maxBytes: number): number => {
    const perRow = Math.max(1, rawBytes(batch, from, batch.rowCount) / Math.max(1, batch.rowCount - from))
    const groupRowsMax = Math.max(1, Math.min(state.settings.rowGroupSize, Math.floor(state.settings.rowGroupBytes / perRow)))
    let at = from
    let retries = 0
    while (at < batch.rowCount) {
      const partEmpty = state.rowGroups.length === 0
      const footer = state.footerSize(state.rowGroups)
      const room = maxBytes - state.partBytes() - footer
      if (!partEmpty && room <= 0) break
      const target = Math.min(room, maxBytes / GROUPS_PER_CAP)
      let rows = Math.max(1, Math.min(batch.rowCount - at, groupRowsMax, Math.floor((target * FILL) / (ratio * perRow))))
      for (;;) {
        const encoded = state.encode(batch, words, at, at + rows)
        const raw = rawBytes(batch, at, at + rows)
        if (raw > 0) ratio = encoded.bytes / raw
        const total = state.partBytes() + state.footerSize([...state.rowGroups, encoded.group])
        if (total <= maxBytes || (partEmpty && rows === 1)) {
          state.commit(encoded.group)
          at += rows
          break
        }
        state.rollBack(encoded.bytes)
        const available = maxBytes - (total - encoded.bytes)
        const fewer = Math.min(rows - 1, Math.floor((rows * available * FILL) / encoded.bytes))
        if (partEmpty) rows = Math.max(1, fewer)
        else if (fewer >= 1 && retries < RETRIES) {
          retries++
          rows = fewer
        } else return at - from
      }
    }
    return at - from
  }
}
