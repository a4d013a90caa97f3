import * as NodeStream from "@effect/platform-node/NodeStream"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as zlib from "node:zlib"
import { describeCause, FormatError } from "../../../core/errors.js"

const LF = 0x0a
const CR = 0x0d
const QUOTE = 0x22
const SPACE = 0x20
const TAB = 0x09

/** Counts records as bytes arrive; `finish` gives the total. */
interface RecordCounter {
  readonly update: (chunk: Uint8Array) => void
  readonly finish: () => number
}

/**
 * RFC 4180 records: a line feed outside quotes ends a record (a doubled quote inside a quoted field toggles twice,
 * so it needs no special case); a last record without a line feed still counts. Every record but the header is a
 * row — including an empty line, which is a row whose single column is NULL.
 */
export const csvRowCounter = (): RecordCounter => {
  let records = 0
  let inQuotes = false
  let last = -1
  return {
    update: (chunk) => {
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!
        if (byte === QUOTE) inQuotes = !inQuotes
        else if (byte === LF && !inQuotes) records++
      }
      if (chunk.length > 0) last = chunk[chunk.length - 1]!
    },
    finish: () => {
      const total = records + (last !== -1 && last !== LF ? 1 : 0)
      return Math.max(0, total - 1)
    }
  }
}

/** NDJSON rows: lines holding anything but whitespace (JSON text never contains a raw line feed). */
export const ndjsonRowCounter = (): RecordCounter => {
  let rows = 0
  let content = false
  return {
    update: (chunk) => {
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!
        if (byte === LF) {
          if (content) rows++
          content = false
        } else if (byte !== CR && byte !== SPACE && byte !== TAB) content = true
      }
    },
    finish: () => rows + (content ? 1 : 0)
  }
}

/**
 * Counts the rows of a text part as it streams; a part whose key ends in `.gz` is gunzipped on the way (the key,
 * not the export's current config, says how the part was written). Memory stays at one chunk.
 */
export const countTextRows =
  (format: string, makeCounter: () => RecordCounter) =>
  <E>(key: string, read: () => Stream.Stream<Uint8Array, E>): Effect.Effect<number, FormatError | E> =>
    Effect.suspend(() => {
      const counter = makeCounter()
      const bytes: Stream.Stream<Uint8Array, FormatError | E> = key.endsWith(".gz")
        ? NodeStream.pipeThroughDuplex(
            read(),
            () => zlib.createGunzip(),
            (cause) => new FormatError({ format, message: `${key} is not a valid gzip stream: ${describeCause(cause)}` })
          )
        : read()
      return Stream.runForEach(bytes, (chunk) => Effect.sync(() => counter.update(chunk))).pipe(
        Effect.map(() => counter.finish())
      )
    })
