/**
 * An output column of the base query, or the first non-NULL of several columns (SQL `COALESCE(a, b)`: an
 * incremental cursor with a `cursor_fallback_column`). Only `After`, `AtMost` and `orderBy` take a `Coalesce`.
 */
export type ColumnRef = string | { readonly _tag: "Coalesce"; readonly columns: ReadonlyArray<string> }

/**
 * A condition on the rows of an export's base query, rendered by the source in its own dialect. Values are text in
 * the source's input syntax (`keyText` in `src/core/key-text.ts` makes them from batch values); the source binds
 * them as parameters, never by string concatenation.
 */
export type RowFilter =
  /** `low <= column <= high` (chunked mode). */
  | { readonly _tag: "Between"; readonly column: string; readonly low: string; readonly high: string }
  /** `column IS NULL` (the extra chunk that keeps rows with a NULL chunk key). */
  | { readonly _tag: "IsNull"; readonly column: string }
  /** Row-wise `(c1, c2, …) > (v1, v2, …)` (incremental cursor, keyset pages). */
  | { readonly _tag: "After"; readonly columns: ReadonlyArray<ColumnRef>; readonly values: ReadonlyArray<string> }
  /** `column >= value` (time windows). */
  | { readonly _tag: "AtLeast"; readonly column: string; readonly value: string }
  /** `column <= value` (cursor lag, time windows). */
  | { readonly _tag: "AtMost"; readonly column: ColumnRef; readonly value: string }
