/**
 * PostgreSQL WAL positions (LSNs) as JS numbers, and their two spellings: PostgreSQL's own (`16/B374D848`, for SQL
 * and replication commands) and Rivet's fixed-width one (`00000016/B374D848`, the `__pos` column and the state
 * store's position: as text it sorts in WAL order, and pg_lsn reads it back). A number holds an LSN exactly below
 * 2^53 (8 PiB of WAL); the parser refuses anything above rather than round it.
 */

const TWO32 = 2 ** 32
/** The high word of the largest exact LSN: 2^53 - 1 = 0x1FFFFF/FFFFFFFF. */
const MAX_EXACT_HIGH = 0x1fffff

/** The big-endian uint64 at `b[at, at + 8)`, as a number. */
export const lsnAt = (b: Uint8Array, at: number): number =>
  (((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0) * TWO32 +
  (((b[at + 4]! << 24) | (b[at + 5]! << 16) | (b[at + 6]! << 8) | b[at + 7]!) >>> 0)

const high = (lsn: number): number => Math.floor(lsn / TWO32)

/** PostgreSQL's spelling: upper-case hex, no padding (`16/B374D848`, `0/0`). */
export const formatLsn = (lsn: number): string => {
  const hi = high(lsn)
  return `${hi.toString(16).toUpperCase()}/${(lsn - hi * TWO32).toString(16).toUpperCase()}`
}

/** The fixed-width spelling (`00000016/B374D848`): the `__pos` value and the stored position. */
export const positionText = (lsn: number): string => {
  const hi = high(lsn)
  return `${hi.toString(16).toUpperCase().padStart(8, "0")}/${(lsn - hi * TWO32).toString(16).toUpperCase().padStart(8, "0")}`
}

/** Bytes in a `positionText`. */
export const POSITION_TEXT_BYTES = 17

const HEX = [48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 65, 66, 67, 68, 69, 70] // 0-9 A-F

/** Writes `positionText(lsn)` as ASCII at `target[at, at + 17)`, without making the string. */
export const writePositionText = (target: Uint8Array, at: number, lsn: number): void => {
  const hi = high(lsn)
  let lo = lsn - hi * TWO32
  let word = hi
  for (let i = 7; i >= 0; i--) {
    target[at + i] = HEX[word % 16]!
    word = Math.floor(word / 16)
  }
  target[at + 8] = 47 // '/'
  for (let i = 16; i >= 9; i--) {
    target[at + i] = HEX[lo % 16]!
    lo = Math.floor(lo / 16)
  }
}

const LSN_TEXT = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/

/** `16/B374D848` or `00000016/B374D848` (1–8 hex digits each side) → the LSN; undefined for anything else. */
export const parseLsn = (text: string): number | undefined => {
  const match = LSN_TEXT.exec(text)
  if (match === null) return undefined
  const hi = parseInt(match[1]!, 16)
  return hi > MAX_EXACT_HIGH ? undefined : hi * TWO32 + parseInt(match[2]!, 16)
}
