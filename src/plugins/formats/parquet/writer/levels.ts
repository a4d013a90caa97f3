import type { ColumnData } from "../../../../core/columns/data.js"

/**
 * Repetition and definition levels of a page (Dremel encoding), built from the validity bitmaps and list offsets.
 * Every node Rivet writes is OPTIONAL, so a flat column's definition level is 1 for a value and 0 for NULL, and a
 * column nested in `depth` lists (optional list → repeated group → optional element, per level) has levels up to
 * `2 * depth + 1`: at each list, one more for "the list is not NULL" and one more for "it has elements".
 */
export class Levels {
  rep = new Uint8Array(1 << 14)
  def = new Uint8Array(1 << 14)
  length = 0

  clear(): void {
    this.length = 0
  }

  private reserve(more: number): void {
    const needed = this.length + more
    if (needed <= this.def.length) return
    const size = Math.max(needed, this.def.length * 2)
    const rep = new Uint8Array(size)
    rep.set(this.rep.subarray(0, this.length))
    const def = new Uint8Array(size)
    def.set(this.def.subarray(0, this.length))
    this.rep = rep
    this.def = def
  }

  /** Definition levels of rows `[from, to)` of a flat column (repetition levels stay unused). */
  appendFlat(data: ColumnData, from: number, to: number): void {
    this.reserve(to - from)
    const def = this.def
    const validity = data.validity
    let at = this.length
    if (validity === undefined) {
      def.fill(1, at, at + to - from)
      at += to - from
    } else {
      for (let i = from; i < to; i++) def[at++] = (validity[i >>> 3]! >>> (i & 7)) & 1
    }
    this.length = at
  }

  /** Levels of rows `[from, to)` of a column nested in lists. */
  appendNested(data: ColumnData, from: number, to: number): void {
    for (let row = from; row < to; row++) this.node(data, row, 0, 0, 1)
  }

  private push(rep: number, def: number): void {
    if (this.length === this.def.length) this.reserve(1)
    this.rep[this.length] = rep
    this.def[this.length++] = def
  }

  // `def` is the level of the parent being present; `listLevel` the repetition level a list at this depth repeats at.
  private node(data: ColumnData, i: number, rep: number, def: number, listLevel: number): void {
    const validity = data.validity
    if (validity !== undefined && (validity[i >>> 3]! & (1 << (i & 7))) === 0) {
      this.push(rep, def)
      return
    }
    if (data.layout !== "list") {
      this.push(rep, def + 1)
      return
    }
    const start = data.offsets[i]!
    const end = data.offsets[i + 1]!
    if (start === end) {
      this.push(rep, def + 1)
      return
    }
    for (let e = start; e < end; e++) this.node(data.child, e, e === start ? rep : listLevel, def + 2, listLevel + 1)
  }
}
