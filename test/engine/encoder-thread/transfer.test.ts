import { describe, expect, it } from "vitest"
import { MessageChannel, receiveMessageOnPort } from "node:worker_threads"
import { BinaryBuilder, ListBuilder, NumberBuilder } from "../../../src/core/columns/builders.js"
import type { BinaryData, ColumnData, Int32Data, ListData } from "../../../src/core/columns/data.js"
import { AlreadyHandedOver, transferable } from "../../../src/engine/encoder-thread/transfer.js"

const text = (values: ReadonlyArray<string | null>): BinaryData => {
  const builder = new BinaryBuilder(4)
  for (const value of values) {
    if (value === null) builder.appendNull()
    else builder.appendString(value)
  }
  return builder.finish()
}

const ints = (values: ReadonlyArray<number>): Int32Data => {
  const builder = new NumberBuilder("int32", 4)
  for (const value of values) builder.push(value)
  return builder.finish() as Int32Data
}

/** Posts the columns through a real port with the transfer list, as the encoder thread does, and reads them back. */
const postAndReceive = (columns: ReadonlyArray<ColumnData>): ReadonlyArray<ColumnData> => {
  const { port1, port2 } = new MessageChannel()
  const { columns: posted, transfer } = transferable(columns)
  port1.postMessage(posted, [...transfer])
  const received = receiveMessageOnPort(port2)!.message as ReadonlyArray<ColumnData>
  port1.close()
  return received
}

describe("transferable", () => {
  it("transfers a builder's buffers as they are and the receiver sees the same bytes", () => {
    const column = text(["a", null, "ccc"])
    const { columns, transfer } = transferable([column])
    const sent = columns[0] as BinaryData
    expect(sent.data).toBe(column.data)
    expect(sent.offsets).toBe(column.offsets)
    expect(transfer).toHaveLength(3) // data, offsets, validity
    const received = postAndReceive([text(["a", null, "ccc"])])[0] as BinaryData
    expect(Buffer.from(received.data).toString()).toBe("accc")
    expect([...received.offsets]).toEqual([0, 1, 1, 4])
    expect(received.validity![0]).toBe(0b101)
  })

  it("copies a view into a shared buffer and leaves the original readable", () => {
    const shared = new Int32Array([1, 2, 3, 4])
    const view: Int32Data = { layout: "int32", length: 2, nullCount: 0, validity: undefined, values: shared.subarray(1, 3) }
    const received = postAndReceive([view])[0] as Int32Data
    expect([...received.values]).toEqual([2, 3])
    expect([...shared]).toEqual([1, 2, 3, 4])
  })

  it("copies whole buffers no builder made (a hand-made column stays usable)", () => {
    const values = new Int32Array([7, 8])
    const column: Int32Data = { layout: "int32", length: 2, nullCount: 0, validity: undefined, values }
    const { columns } = transferable([column])
    expect((columns[0] as Int32Data).values).not.toBe(values)
    postAndReceive([column])
    expect([...values]).toEqual([7, 8])
  })

  it("transfers a builder's buffer with its unused slack, and copies any other view of it", () => {
    const builder = new NumberBuilder("int32", 8)
    for (let i = 0; i < 7; i++) builder.push(i)
    const column = builder.finish() as Int32Data
    expect(column.values.buffer.byteLength).toBe(32) // 7 values and the slack of one
    const prefix: Int32Data = { ...column, length: 2, values: column.values.subarray(0, 2) }
    const copied = transferable([prefix])
    expect(copied.transfer).toHaveLength(1)
    expect((copied.columns[0] as Int32Data).values.buffer).not.toBe(column.values.buffer)
    const received = postAndReceive([column])[0] as Int32Data
    expect([...received.values]).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(column.values.length).toBe(0) // the builder's buffer itself went over
  })

  it("lists: the offsets and the child's buffers travel too", () => {
    const list = new ListBuilder(new NumberBuilder("int32", 4))
    list.child.push(1)
    list.child.push(2)
    list.endList()
    list.appendNull()
    const received = postAndReceive([list.finish()])[0] as ListData
    expect([...received.offsets]).toEqual([0, 2, 2])
    expect([...(received.child as Int32Data).values]).toEqual([1, 2])
  })

  it("the same column twice in a batch is sent once and arrives twice", () => {
    const column = ints([5, 6])
    const { transfer } = transferable([column, column])
    expect(transfer).toHaveLength(1)
    const again = ints([5, 6])
    const received = postAndReceive([again, again])
    expect(received.map((data) => [...(data as Int32Data).values])).toEqual([[5, 6], [5, 6]])
  })

  it("refuses a batch whose buffers were handed over already instead of sending it empty", () => {
    const column = ints([1, 2, 3])
    postAndReceive([column])
    expect(column.values.length).toBe(0) // detached: the bytes live on the other side now
    expect(() => transferable([column])).toThrow(AlreadyHandedOver)
  })
})
