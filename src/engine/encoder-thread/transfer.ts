import type { ColumnData } from "../../core/batch.js"
import { takeForTransfer, wasHandedOver } from "../../core/columns/ownership.js"

/** A column buffer that went to the encoder thread already: the batch was written a second time. */
export class AlreadyHandedOver extends Error {
  constructor() {
    super("a batch was written again after its column buffers had been handed to the encoder thread")
  }
}

/** A batch's columns ready to post to the encoder thread, and the ArrayBuffers to transfer with them. */
export interface Transferable {
  readonly columns: ReadonlyArray<ColumnData>
  readonly transfer: ReadonlyArray<ArrayBuffer>
}

/**
 * The columns with every buffer either transferred as it is (a builder made it for this column alone:
 * ownership.ts) or copied into one of its own (a view into a shared buffer). Transferring moves the bytes' ownership
 * to the encoder thread at once, so they stop counting against this thread's memory, and saves a copy of every
 * batch. Throws `AlreadyHandedOver` for a buffer an earlier batch transferred.
 */
export const transferable = (columns: ReadonlyArray<ColumnData>): Transferable => {
  const transfer = new Set<ArrayBuffer>()
  const own = <T extends { slice: () => T; buffer: ArrayBufferLike; byteOffset: number; byteLength: number }>(array: T): T => {
    // The same column twice in one batch: its buffers are in the list already.
    if (transfer.has(array.buffer as ArrayBuffer)) return array
    if (wasHandedOver(array.buffer)) throw new AlreadyHandedOver()
    if (takeForTransfer(array)) {
      transfer.add(array.buffer as ArrayBuffer)
      return array
    }
    const copy = array.slice()
    transfer.add(copy.buffer as ArrayBuffer)
    return copy
  }
  type Values = Extract<ColumnData, { readonly values: unknown }>
  const withValues = <D extends Values>(data: D, validity: Uint8Array | undefined): D => ({
    ...data,
    validity,
    values: own<D["values"]>(data.values)
  })
  const column = (data: ColumnData): ColumnData => {
    const validity = data.validity === undefined ? undefined : own(data.validity)
    switch (data.layout) {
      case "fixed":
        return { ...data, validity, data: own(data.data) }
      case "binary":
        return { ...data, validity, offsets: own(data.offsets), data: own(data.data) }
      case "list":
        return { ...data, validity, offsets: own(data.offsets), child: column(data.child) }
      case "int16":
      case "int32":
      case "int64":
      case "float32":
      case "float64":
      case "bool":
        return withValues(data, validity)
    }
  }
  return { columns: columns.map(column), transfer: [...transfer] }
}
