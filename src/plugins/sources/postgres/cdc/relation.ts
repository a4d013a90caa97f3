import { int16At, int32At, uint32At } from "../binary-wire.js"

/**
 * pgoutput's Relation message (protocol version 1): a table's OID, name, replica identity and columns — sent before
 * the first change of a table in a session and again after its columns change — and the error every malformed
 * message of the protocol is reported with.
 */

const RELATION = 0x52 // R

const utf8Decoder = new TextDecoder()

/** A pgoutput message the decoder cannot take: malformed, of an unknown kind, or out of order. */
export class PgoutputError extends Error {}

export interface RelationColumn {
  readonly name: string
  readonly type: number
  readonly typmod: number
  readonly key: boolean
}

export interface Relation {
  readonly oid: number
  readonly schema: string
  readonly name: string
  /** d(efault: the primary key), n(othing), f(ull), i(ndex). */
  readonly replicaIdentity: "d" | "n" | "f" | "i"
  readonly columns: ReadonlyArray<RelationColumn>
}

export const malformed = (what: string): PgoutputError => new PgoutputError(`malformed pgoutput message: ${what}`)

export const kindText = (kind: number | undefined): string => (kind === undefined ? "end of message" : `'${String.fromCharCode(kind)}'`)

/** The NUL-terminated string at `b[at…]` and where it ends (after the NUL). */
const cstringAt = (b: Uint8Array, at: number, end: number): { readonly text: string; readonly next: number } => {
  let nul = at
  while (nul < end && b[nul] !== 0) nul++
  if (nul === end) throw malformed("a string runs past the end of the message")
  return { text: utf8Decoder.decode(b.subarray(at, nul)), next: nul + 1 }
}

const REPLICA_IDENTITIES = ["d", "n", "f", "i"] as const

/** Parses a Relation ('R') message at b[start] (b[start] === 0x52); the message runs to the end of `b`. */
export const parseRelation = (b: Uint8Array, start: number): Relation => {
  if (b[start] !== RELATION) throw new PgoutputError(`not a pgoutput Relation message: ${kindText(b[start])}`)
  const end = b.byteLength
  if (end - start < 5) throw malformed("Relation message too short")
  const oid = uint32At(b, start + 1)
  const schema = cstringAt(b, start + 5, end)
  const name = cstringAt(b, schema.next, end)
  let p = name.next
  if (end - p < 3) throw malformed("Relation message too short")
  const identity = String.fromCharCode(b[p]!)
  const replicaIdentity = REPLICA_IDENTITIES.find((known) => known === identity)
  if (replicaIdentity === undefined) throw malformed(`unknown replica identity '${identity}'`)
  const count = int16At(b, p + 1)
  p += 3
  const columns: Array<RelationColumn> = []
  for (let i = 0; i < count; i++) {
    if (p >= end) throw malformed("Relation message too short")
    const key = (b[p]! & 1) === 1
    const column = cstringAt(b, p + 1, end)
    if (end - column.next < 8) throw malformed("Relation message too short")
    columns.push({ name: column.text, type: uint32At(b, column.next), typmod: int32At(b, column.next + 4), key })
    p = column.next + 8
  }
  // Protocol version 1 sends pg_catalog as the empty string.
  return { oid, schema: schema.text === "" ? "pg_catalog" : schema.text, name: name.text, replicaIdentity, columns }
}

