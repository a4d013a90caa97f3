/**
 * Binary log positions: a file and a byte offset in it (where the next transaction starts), and the GTID of the last
 * transaction before it when the server has one. Their text — the `__pos` column and the state store's position —
 * is `binlog.000042:000000001234`, then `@0-1-57` with a GTID: the offset is zero-padded and the files' numbers are
 * fixed-width, so text order is log order. Only the file and offset are read back; the GTID is for the user.
 */
export interface BinlogPosition {
  readonly file: string
  readonly offset: number
  readonly gtid?: string | undefined
}

const OFFSET_DIGITS = 12

export const positionText = (position: BinlogPosition): string =>
  `${position.file}:${String(position.offset).padStart(OFFSET_DIGITS, "0")}${position.gtid === undefined ? "" : `@${position.gtid}`}`

const TEXT = /^([^:@/\\\s]+):(\d{1,20})(?:@(\S+))?$/

/** The position a `positionText` spells, or undefined when `text` is not one (a PostgreSQL LSN, a cursor value). */
export const parsePosition = (text: string): BinlogPosition | undefined => {
  const match = TEXT.exec(text)
  if (match === null) return undefined
  const offset = Number(match[2])
  return Number.isSafeInteger(offset) ? { file: match[1]!, offset, gtid: match[3] } : undefined
}

/** The number a binary log file name ends with (`binlog.000042` → 42): files of one server sort by it. */
const fileNumber = (file: string): number => Number(/(\d+)$/.exec(file)?.[1] ?? -1)

/** Negative, zero or positive as `a` is before, at or after `b` in the log. */
export const comparePositions = (a: BinlogPosition, b: BinlogPosition): number =>
  a.file === b.file ? a.offset - b.offset : fileNumber(a.file) - fileNumber(b.file)
