/** What one attempt of a unit did: rows and bytes written, parts committed, sink calls retried. */
export interface UnitStats {
  readonly rows: number
  readonly bytes: number
  readonly parts: number
  readonly retries: number
}

export const noStats: UnitStats = { rows: 0, bytes: 0, parts: 0, retries: 0 }

export const addStats = (a: UnitStats, b: Partial<UnitStats>): UnitStats => ({
  rows: a.rows + (b.rows ?? 0),
  bytes: a.bytes + (b.bytes ?? 0),
  parts: a.parts + (b.parts ?? 0),
  retries: a.retries + (b.retries ?? 0)
})
