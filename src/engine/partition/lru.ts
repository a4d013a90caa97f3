/**
 * The open entries of a bounded set, least recently used first: `use` marks an entry used, `evictFor` says which
 * entry to close before another may be opened. A `Map` keeps insertion order, so re-inserting on use is the LRU.
 */
export class LruOpen<V> {
  private readonly entries = new Map<string, V>()
  constructor(readonly capacity: number) {}

  get size(): number {
    return this.entries.size
  }

  /** The entry under `key`, marked most recently used; undefined when it is not open. */
  use(key: string): V | undefined {
    const value = this.entries.get(key)
    if (value === undefined) return undefined
    this.entries.delete(key)
    this.entries.set(key, value)
    return value
  }

  /** The least recently used entry, removed, when the set is full (so one more can be opened); else undefined. */
  evictFor(): readonly [string, V] | undefined {
    if (this.entries.size < this.capacity) return undefined
    const oldest = this.entries.entries().next().value
    if (oldest === undefined) return undefined
    this.entries.delete(oldest[0])
    return oldest
  }

  add(key: string, value: V): void {
    this.entries.set(key, value)
  }

  delete(key: string): void {
    this.entries.delete(key)
  }

  /** Every open entry, removed (least recently used first). */
  drain(): Array<readonly [string, V]> {
    const all = [...this.entries]
    this.entries.clear()
    return all
  }
}
