import type { ByteBuffer } from "./bytes.js"

/**
 * Thrift's compact protocol, as much of it as Parquet's page headers and footer use: structs of i8/i16/i32/i64,
 * booleans, binary/strings, lists of structs, i32s or strings. Fields must be written in increasing id order.
 */
const Compact = { Stop: 0, True: 1, False: 2, Byte: 3, I16: 4, I32: 5, I64: 6, Binary: 8, List: 9, Struct: 12 } as const
type Compact = (typeof Compact)[keyof typeof Compact]

const utf8 = new TextEncoder()

export class ThriftWriter {
  private lastId = 0
  private readonly outer: Array<number> = []

  constructor(readonly out: ByteBuffer) {}

  private field(id: number, type: Compact): void {
    const delta = id - this.lastId
    if (delta > 0 && delta <= 15) {
      this.out.u8((delta << 4) | type)
    } else {
      this.out.u8(type)
      this.zigzag32(id)
    }
    this.lastId = id
  }

  private zigzag32(value: number): void {
    this.out.varint(((value << 1) ^ (value >> 31)) >>> 0)
  }

  private zigzag64(value: number): void {
    this.out.varlong(value >= 0 ? value * 2 : -value * 2 - 1)
  }

  private binaryBody(bytes: Uint8Array): void {
    this.out.varint(bytes.length)
    this.out.append(bytes)
  }

  bool(id: number, value: boolean): void {
    this.field(id, value ? Compact.True : Compact.False)
  }

  i8(id: number, value: number): void {
    this.field(id, Compact.Byte)
    this.out.u8(value & 0xff)
  }

  i16(id: number, value: number): void {
    this.field(id, Compact.I16)
    this.zigzag32(value)
  }

  i32(id: number, value: number): void {
    this.field(id, Compact.I32)
    this.zigzag32(value)
  }

  /** An i64 field from a safe integer (offsets, sizes and counts never come near 2^53). */
  i64(id: number, value: number): void {
    this.field(id, Compact.I64)
    this.zigzag64(value)
  }

  binary(id: number, bytes: Uint8Array): void {
    this.field(id, Compact.Binary)
    this.binaryBody(bytes)
  }

  string(id: number, text: string): void {
    this.binary(id, utf8.encode(text))
  }

  /** A struct field whose fields `body` writes. */
  struct(id: number, body: () => void): void {
    this.field(id, Compact.Struct)
    this.structBody(body)
  }

  /** A struct's fields and its stop byte: the top-level message, or an element of a list of structs. */
  structBody(body: () => void): void {
    this.outer.push(this.lastId)
    this.lastId = 0
    body()
    this.out.u8(Compact.Stop)
    this.lastId = this.outer.pop()!
  }

  private listHeader(id: number, size: number, element: Compact): void {
    this.field(id, Compact.List)
    if (size < 15) {
      this.out.u8((size << 4) | element)
    } else {
      this.out.u8(0xf0 | element)
      this.out.varint(size)
    }
  }

  structList<A>(id: number, items: ReadonlyArray<A>, body: (item: A) => void): void {
    this.listHeader(id, items.length, Compact.Struct)
    for (const item of items) this.structBody(() => body(item))
  }

  i32List(id: number, items: ReadonlyArray<number>): void {
    this.listHeader(id, items.length, Compact.I32)
    for (const item of items) this.zigzag32(item)
  }

  stringList(id: number, items: ReadonlyArray<string>): void {
    this.listHeader(id, items.length, Compact.Binary)
    for (const item of items) this.binaryBody(utf8.encode(item))
  }
}
