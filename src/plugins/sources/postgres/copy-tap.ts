import { Socket } from "node:net"
import { Readable } from "node:stream"

/**
 * Reads a COPY's CopyData messages straight from the connection's socket instead of through postgres.js 3.4.9's
 * message loop, which makes two Buffers per message (one per row) and pushes each through a Readable: on a narrow
 * table that is a fifth of the reading thread. Every other message — CopyDone, ErrorResponse, NoticeResponse, a
 * socket error — still goes to postgres.js, so errors, cancellation and the connection's life are its own as before.
 *
 * The tap starts inside postgres.js' handling of CopyOutResponse, mid-way through a socket read whose rest
 * postgres.js still parses (and it may keep a partial message of it). So it first passes socket reads on to postgres.js
 * (`delegating`), seeing its CopyData payloads through the stream's `push`: where the last payload of a read ended
 * tells what postgres.js holds back (a CopyData cut by the read's end). The tap gives postgres.js the next read's
 * bytes that complete that message — it then holds nothing back — and parses the rest itself (`direct`). At the
 * first message that is not CopyData it gives that message and everything after it back to postgres.js and puts
 * postgres.js' own listener back. A tap that cannot find the socket or its single listener is never started.
 */
export interface CopyTap {
  /** Stops delivering payloads; the socket is paused (payloads already read wait in order). */
  readonly pause: () => void
  /** Delivers what waited (in a later tick, never inside the caller), then reads the socket again. */
  readonly resume: () => void
  /** Whether CopyData is read straight off the socket now (the tap's `direct` mode). */
  readonly direct: () => boolean
}

const COPY_DATA = 100 // 'd'
// The stream's end, queued behind the payloads that wait.
const END = null

type Deliver = (bytes: Uint8Array, start: number, end: number) => void
type Listener = (chunk: Buffer) => void

/** The socket behind postgres.js' COPY stream: its `read()` is `socket.resume()`, called here once to see on what. */
const socketOf = (stream: Readable): Socket | undefined => {
  const original = Socket.prototype.resume
  let seen: Socket | undefined
  Socket.prototype.resume = function (this: Socket) {
    // The one way to learn which socket: postgres.js keeps it in a closure.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    seen = this
    return original.call(this)
  }
  try {
    ;(stream as unknown as { _read: (size: number) => void })._read(0)
  } catch {
    return undefined
  } finally {
    Socket.prototype.resume = original
  }
  return seen
}

/**
 * Taps the COPY whose stream postgres.js just handed over (call it synchronously from the hand-over). `deliver` gets
 * each CopyData payload as `bytes[start, end)`, a view valid during the call. Returns `undefined` — the caller then
 * reads the stream as usual — when the socket or its listener cannot be found.
 */
export const tapCopy = (stream: Readable, deliver: Deliver): CopyTap | undefined => {
  const socket = socketOf(stream)
  const listeners = socket?.listeners("data")
  if (socket === undefined || listeners?.length !== 1) return undefined
  const driver = listeners[0] as Listener

  let direct = false
  let tapped = true
  // postgres.js has handed over the stream's end: the COPY is over.
  let over = false
  let paused = false
  let draining = false
  // Payloads (and the end) read while paused, in order.
  const waiting: Array<Uint8Array | typeof END> = []
  // A message cut by the end of socket reads (direct mode): its pieces, kept until it is whole and joined once, so
  // that a value of hundreds of MiB is not copied again at every read; the first piece holds its header.
  let pieces: Array<Buffer> = []
  let have = 0
  // Where postgres.js' last CopyData payload ended, to see what it holds back.
  let lastBuffer: ArrayBufferLike | undefined
  let lastEnd = -1

  const payload = (bytes: Uint8Array, start: number, end: number) => {
    if (paused || waiting.length > 0) waiting.push(bytes.subarray(start, end))
    else deliver(bytes, start, end)
  }

  const push = Readable.prototype.push
  stream.push = (chunk: unknown): boolean => {
    if (chunk === null) {
      over = true
      if (paused || waiting.length > 0) waiting.push(END)
      else push.call(stream, null)
      return true
    }
    const bytes = chunk as Uint8Array
    lastBuffer = bytes.buffer
    lastEnd = bytes.byteOffset + bytes.byteLength
    payload(bytes, 0, bytes.byteLength)
    return !paused
  }

  const untap = () => {
    if (!tapped) return
    tapped = false
    // A socket that closed has dropped every listener: postgres.js is done with it too.
    if (socket.listeners("data").includes(tap)) {
      socket.removeListener("data", tap)
      socket.on("data", driver)
    }
  }

  // Direct mode: whole CopyData messages from `b[from…]` are delivered; the first other message hands the rest to
  // postgres.js; a message cut by the end of the read waits in `pieces`.
  const parse = (b: Buffer, from: number) => {
    let p = from
    const end = b.length
    while (end - p >= 5) {
      if (b[p] !== COPY_DATA) {
        untap()
        driver(p === 0 ? b : b.subarray(p))
        return
      }
      const length = b.readUInt32BE(p + 1)
      if (end - p < length + 1) break
      payload(b, p + 5, p + 1 + length)
      p += length + 1
    }
    if (p < end) {
      pieces = [b.subarray(p)]
      have = end - p
    }
  }

  // Continues the message cut at the end of the last reads with `chunk`: where the rest of `chunk` starts, or -1 when
  // nothing more is to be parsed here.
  const completePartial = (chunk: Buffer): number => {
    if (have < 5) {
      // A cut header (at most 4 bytes, perhaps of another message): parse it joined with this read.
      const joined = Buffer.concat([pieces[0]!, chunk])
      pieces = []
      have = 0
      parse(joined, 0)
      return -1
    }
    const total = pieces[0]!.readUInt32BE(1) + 1
    const missing = total - have
    if (missing > chunk.length) {
      pieces.push(chunk)
      have += chunk.length
      return -1
    }
    pieces.push(chunk.subarray(0, missing))
    const message = Buffer.concat(pieces, total)
    pieces = []
    have = 0
    payload(message, 5, total)
    return missing
  }

  // Bytes postgres.js holds back after the read it parsed last, when known: the start of a CopyData message or none.
  let heldBack: Buffer | undefined

  // The rest of `chunk` after postgres.js' last CopyData payload in it, if that is where its parsing stopped.
  const heldBackBy = (chunk: Buffer): Buffer | undefined => {
    if (lastBuffer === undefined || over || !tapped) return undefined
    let base = chunk.byteOffset
    if (lastBuffer !== chunk.buffer) {
      // postgres.js joined what it held back with this read (Buffer.concat): `chunk` is the end of that buffer.
      base = lastBuffer.byteLength - chunk.length
      if (base < 0 || !chunk.equals(new Uint8Array(lastBuffer, base, chunk.length))) return undefined
    }
    const at = lastEnd - base
    if (at < 0 || at > chunk.length) return undefined
    const rest = chunk.subarray(at)
    // A whole message after the payload would have been parsed too: only a cut CopyData may be held back.
    if (rest.length > 0 && rest[0] !== COPY_DATA) return undefined
    if (rest.length >= 5 && rest.readUInt32BE(1) + 1 <= rest.length) return undefined
    return rest
  }

  // Gives postgres.js the bytes that complete the message it holds back, then reads the rest directly.
  const takeOver = (held: Buffer, chunk: Buffer): boolean => {
    const head = held.length >= 5 ? held : Buffer.concat([held, chunk.subarray(0, 5 - held.length)])
    const missing = held.length === 0 ? 0 : head.length < 5 ? Number.POSITIVE_INFINITY : head.readUInt32BE(1) + 1 - held.length
    if (missing > chunk.length) return false
    if (missing > 0) driver(chunk.subarray(0, missing))
    direct = true
    parse(chunk, missing)
    return true
  }

  const tap: Listener = (chunk) => {
    if (direct) {
      const from = have === 0 ? 0 : completePartial(chunk)
      if (from >= 0) parse(chunk, from)
    } else {
      const held = heldBack
      heldBack = undefined
      if (held === undefined || !takeOver(held, chunk)) {
        lastBuffer = undefined
        driver(chunk)
        // The COPY ended or failed in this read: postgres.js' listener is back before anything else is sent.
        if (over || stream.destroyed) untap()
        heldBack = heldBackBy(chunk)
      }
    }
    if (paused && direct && tapped) socket.pause()
  }

  const drain = () => {
    draining = false
    while (!paused && waiting.length > 0) {
      const next = waiting.shift()!
      if (next === END) push.call(stream, null)
      else deliver(next, 0, next.byteLength)
    }
    if (!paused) socket.resume()
  }

  stream.once("close", untap)
  socket.removeListener("data", driver)
  socket.on("data", tap)
  return {
    pause: () => {
      paused = true
      // Delegating, postgres.js pauses the socket itself (`push` returns false); after the COPY nothing may stop
      // the messages behind it (see copy-stream.ts, hazard 2).
      if (direct && tapped) socket.pause()
    },
    resume: () => {
      paused = false
      if (draining) return
      draining = true
      process.nextTick(drain)
    },
    direct: () => direct && tapped
  }
}
