import * as Effect from "effect/Effect"
import { type Batch, type BatchSchema, valueAt } from "../../core/batch.js"
import type { QualityConfig } from "../../config/model.js"
import { IntegrityError } from "../../core/errors.js"
import { UniqueCounter } from "./unique.js"

/** What one attempt's quality gates saw. */
export interface GateValues {
  readonly rows: number
  readonly nulls: ReadonlyMap<string, number>
  readonly missing: ReadonlySet<string>
  readonly unique: ReadonlyMap<string, UniqueCounter>
}

/**
 * Accumulates an export's quality gates over the batches it writes (after any transform), across every chunk or
 * page of the run, and judges them at the end. Counting is O(1) per value; uniqueness uses bounded memory
 * (see UniqueCounter).
 */
export class QualityGates {
  private rows = 0
  private readonly nulls = new Map<string, number>()
  private readonly unique = new Map<string, UniqueCounter>()
  private missing = new Set<string>()

  constructor(
    private readonly exportName: string,
    private readonly config: QualityConfig
  ) {
    for (const column of Object.keys(config.null_ratio_max ?? {})) this.nulls.set(column, 0)
    for (const column of config.unique_columns ?? []) this.unique.set(column, new UniqueCounter())
  }

  /**
   * An empty accumulator with the same gates for one attempt of a chunk or page: when the attempt succeeds the
   * export folds in its `tally()`; either way it is closed, so a retried unit is never counted twice (its values are
   * not duplicates).
   */
  child(): QualityGates {
    return new QualityGates(this.exportName, this.config)
  }

  /** What these gates saw, as a value. The uniqueness counters travel as they are: their hashes may be on disk. */
  tally(): GateValues {
    return { rows: this.rows, nulls: new Map(this.nulls), missing: new Set(this.missing), unique: this.unique }
  }

  /** Adds what an attempt's gates saw; its uniqueness counters are taken over (left empty). */
  fold(values: GateValues): void {
    this.rows += values.rows
    for (const [column, count] of values.nulls) this.nulls.set(column, (this.nulls.get(column) ?? 0) + count)
    for (const column of values.missing) this.missing.add(column)
    for (const [column, counter] of values.unique) this.unique.get(column)?.adopt(counter)
  }

  /** True when some gate needs to see the values (not just the row count). */
  get needsValues(): boolean {
    return this.nulls.size > 0 || this.unique.size > 0
  }

  observe(batch: Batch): void {
    this.rows += batch.rowCount
    if (!this.needsValues) return
    const indexOf = (column: string) => indexIn(batch.schema, column)
    for (const [column, count] of this.nulls) {
      const index = indexOf(column)
      if (index < 0) {
        this.missing.add(column)
        continue
      }
      this.nulls.set(column, count + batch.columns[index]!.nullCount)
    }
    for (const [column, counter] of this.unique) {
      const index = indexOf(column)
      if (index < 0) {
        this.missing.add(column)
        continue
      }
      const data = batch.columns[index]!
      const type = batch.schema.columns[index]!.type
      for (let row = 0; row < data.length; row++) counter.add(valueAt(data, type, row))
    }
  }

  /** Fails with one IntegrityError listing every failed gate; releases spill files either way. */
  /** `rows`: every row the run published, earlier attempts of a resumed run included. */
  verdict(schema: BatchSchema, rows: number): Effect.Effect<void, IntegrityError> {
    return Effect.suspend(() => {
      const failures: Array<string> = []
      const { row_count_min: min, row_count_max: max } = this.config
      if (min !== undefined && rows < min) failures.push(`row_count ${rows} is below the minimum ${min}`)
      if (max !== undefined && rows > max) failures.push(`row_count ${rows} exceeds the maximum ${max}`)
      for (const column of Object.keys(this.config.null_ratio_max ?? {})) {
        if (indexIn(schema, column) < 0) this.missing.add(column)
      }
      for (const column of this.missing) {
        failures.push(`column '${column}' is not in the output (it has: ${schema.columns.map((c) => c.name).join(", ")})`)
      }
      for (const [column, threshold] of Object.entries(this.config.null_ratio_max ?? {})) {
        if (this.missing.has(column)) continue
        const ratio = this.rows === 0 ? 0 : (this.nulls.get(column) ?? 0) / this.rows
        if (ratio > threshold) {
          failures.push(`column '${column}': NULL ratio ${ratio.toFixed(4)} exceeds ${threshold}`)
        }
      }
      for (const [column, counter] of this.unique) {
        const duplicates = counter.duplicates()
        if (!this.missing.has(column) && duplicates > 0) {
          failures.push(`column '${column}': ${duplicates} duplicate value(s) among ${this.rows} rows`)
        }
      }
      if (failures.length === 0) return Effect.void
      return Effect.fail(
        new IntegrityError({
          message: `export '${this.exportName}': ${failures.length} quality check(s) failed:\n${failures.map((f) => `  - ${f}`).join("\n")}`,
          hint: "nothing was published (no manifest, no _SUCCESS, state unchanged); fix the source data or adjust `quality:` in the config"
        })
      )
    })
  }

  close(): void {
    for (const counter of this.unique.values()) counter.close()
  }
}

const indexIn = (schema: BatchSchema, column: string): number =>
  schema.columns.findIndex((candidate) => candidate.name === column)
