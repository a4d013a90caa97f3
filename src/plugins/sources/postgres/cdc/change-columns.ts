import type { Column, ColumnData } from "../../../../core/batch.js"
import * as Changes from "../../../../core/columns/change-columns.js"
import { POSITION_TEXT_BYTES, writePositionText } from "./positions.js"

/** The change columns as PostgreSQL fills them: `__pos` a commit LSN (`positionText`), `__txid` a transaction id. */
export const CHANGE_COLUMNS = Changes.changeColumns({ position: "pg_lsn", txid: "xid" })

export const changeSchema = (columns: ReadonlyArray<Column>) => Changes.changeSchema(CHANGE_COLUMNS, columns)

/** The change columns of `rows` snapshot rows read on the slot's snapshot, which starts at the LSN `position`. */
export const snapshotChangeColumns = (rows: number, position: number, firstSeq: number): ReadonlyArray<ColumnData> => {
  const text = new Uint8Array(POSITION_TEXT_BYTES)
  writePositionText(text, 0, position)
  return Changes.snapshotChangeColumns(rows, text, firstSeq)
}

export const changeColumnsBuilder = (capacity: number) => new Changes.ChangeColumnsBuilder(capacity, POSITION_TEXT_BYTES)
