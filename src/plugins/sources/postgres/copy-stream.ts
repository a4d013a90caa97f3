import { Readable } from "node:stream"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type postgres from "postgres"
import type { SourceError } from "../../../core/errors.js"
import { type CancellableQuery, sendCancel } from "./cancel-request.js"
import { type CopyTap, tapCopy } from "./copy-tap.js"
import { type ErrorContext, fromPostgres, sourceError } from "./errors.js"
import { connectionLost } from "./session.js"

/**
 * `COPY … TO STDOUT` on an export's transaction, read through postgres.js 3.4.9's `.readable()`: every CopyData
 * payload is handed to `onChunk` synchronously, in order, as the socket delivers it (no copy, no per-chunk promise).
 * The payloads are read off the socket by copy-tap.ts where it can, and from the stream otherwise.
 *
 * Four hazards of that stream are handled here (pinned by test/plugins/sources/postgres/copy-stream.test.ts):
 * 1. The stream is handed over by resolving the query's promise. A COPY failing on its first row sends its
 *    ErrorResponse in the same socket read as the CopyOutResponse: postgres.js destroys the stream at once, and its
 *    'error' event — emitted from `process.nextTick`, which runs before promise callbacks — would find no listener
 *    and crash the process. The listeners are attached in the query's `resolve` (the property postgres.js' own
 *    `.cursor()` replaces the same way), synchronously with the hand-over.
 * 2. Backpressure pauses the socket (a `push` returned false) and only the stream's `read()` resumes it. Node never
 *    calls `read()` after the stream has ended or was abandoned, so a socket paused by the last CopyData would never
 *    deliver the CommandComplete and ReadyForQuery behind it: the connection would hang, and the transaction's
 *    COMMIT with it. After the end, an error or a cancel, the socket is resumed through the stream's own `_read`
 *    (postgres.js' `read() { socket.resume() }`).
 * 3. The hand-over also marks the query inactive, and `cancel()` of an inactive query only waits for it to become
 *    active: it is marked active again, so closing the scope mid-stream sends a real cancel request.
 * 4. `query.cancel()` does not return the cancel request's promise, so the request is awaited through the pool's own
 *    canceller (`sendCancel`) before the connection can run anything else.
 */
export interface CopyOut {
  /** Stops delivering chunks (and, through backpressure, reading the socket) until `resume`. */
  readonly pause: () => void
  readonly resume: () => void
  /**
   * Settles once the COPY is over: resolves after its last CopyData (CopyDone) was delivered; rejects with the
   * driver's error, the error `onChunk` threw, or `CopyEndedEarly` when the stream closed without either.
   */
  readonly done: Promise<void>
  /**
   * Stops a COPY still running: a cancel request, then the rest of the stream is drained and discarded until the
   * server reports the end. Resolves when the connection is free for the next statement (or gone).
   */
  readonly cancel: () => Promise<void>
  /** Whether the payloads come straight off the socket at this moment (copy-tap.ts), for tests. */
  readonly fromSocket: () => boolean
}

/** The stream closed before CopyDone without an error: rows may be missing. */
export class CopyEndedEarly extends Error {
  constructor() {
    super("the COPY stream closed before its end")
  }
}

type HookedQuery = postgres.PendingQuery<postgres.Row[]> &
  CancellableQuery & {
    resolve: (value: unknown) => void
    active: boolean
  }

/** Receives one CopyData payload, `bytes[start, end)`: a view valid only during the call. */
export type OnChunk = (bytes: Uint8Array, start: number, end: number) => void

/** How often a COPY that is being stopped checks whether its connection is still there. */
const LOST_POLL_MS = 250

/**
 * Starts `COPY (…) TO STDOUT …` (`text`) on `sql`. `started` resolves once the server has answered CopyOutResponse;
 * a failure before the first row (a syntax error, a statement timeout while planning) rejects it with the driver's
 * error. `cancel` works in either phase.
 */
export const startCopyOut = (
  sql: postgres.TransactionSql,
  text: string,
  onChunk: OnChunk
): CopyOut & { readonly started: Promise<void> } => {
  let stream: Readable | undefined
  let tap: CopyTap | undefined
  let ended = false
  // The server is done with the COPY: its end, an error, or the stream closed under it.
  let over = false
  let discarding = false
  let settle: { resolve: () => void; reject: (cause: unknown) => void } = { resolve: () => {}, reject: () => {} }
  let outcome: { ok: true } | { ok: false; cause: unknown } | undefined
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject }
  })
  // Rejections are observed by whoever awaits `done`; a COPY cancelled before anyone did must not be unhandled.
  done.catch(() => undefined)
  const finish = (result: { ok: true } | { ok: false; cause: unknown }) => {
    if (outcome !== undefined) return
    outcome = result
    if (result.ok) settle.resolve()
    else settle.reject(result.cause)
  }

  const resumeSocket = () => {
    try {
      // postgres.js' `read()`: resumes its socket (hazard 2). Throws once the connection has dropped its socket.
      ;(stream as unknown as { _read: (size: number) => void } | undefined)?._read(0)
    } catch {
      // The connection is gone; its own close handling settles the stream.
    }
  }

  const deliver = (bytes: Uint8Array, start: number, end: number) => {
    if (discarding || outcome !== undefined) return
    try {
      onChunk(bytes, start, end)
    } catch (cause) {
      finish({ ok: false, cause })
    }
  }

  const adopt = (readable: Readable) => {
    stream = readable
    // Tapped, the stream carries only the COPY's end; its 'data' listener keeps it flowing so that 'end' is emitted.
    tap = tapCopy(readable, deliver)
    readable.on("data", (chunk: Uint8Array) => deliver(chunk, 0, chunk.byteLength))
    readable.on("end", () => {
      ended = true
      over = true
      resumeSocket()
      finish({ ok: true })
    })
    readable.on("error", (cause: unknown) => {
      over = true
      resumeSocket()
      finish({ ok: false, cause })
    })
    readable.on("close", () => {
      over = true
      resumeSocket()
      if (!ended) finish({ ok: false, cause: new CopyEndedEarly() })
    })
  }

  // The guarded transaction (session.ts) throws at once when its connection is gone.
  const query = sql.unsafe(text) as HookedQuery
  const handOver = query.resolve
  query.resolve = (value: unknown) => {
    const handedOver = value instanceof Readable && stream === undefined
    if (handedOver) adopt(value)
    handOver(value)
    // Resolving marks the query inactive, and postgres.js' `cancel()` of an inactive query waits for it to become
    // active instead of sending a cancel request: it would never stop this COPY, which is still running (hazard 3).
    if (handedOver) query.active = true
  }

  const streamClosed = (): Promise<void> =>
    stream === undefined || stream.closed || stream.destroyed || ended
      ? Promise.resolve()
      : new Promise((resolve) => stream!.once("close", () => resolve()))

  // Resolves when `wait` settles or the transaction's connection is found closed, whichever comes first.
  const untilSettledOrLost = (wait: Promise<unknown>): Promise<void> =>
    new Promise((resolve) => {
      const watch = setInterval(() => {
        void connectionLost(sql).then((lost) => {
          if (lost) {
            clearInterval(watch)
            resolve()
          }
        })
      }, LOST_POLL_MS)
      wait.then(
        () => {
          clearInterval(watch)
          resolve()
        },
        () => {
          clearInterval(watch)
          resolve()
        }
      )
    })

  const started = (query.readable() as Promise<unknown>).then(() => undefined)
  started.catch((cause: unknown) => {
    over = true
    finish({ ok: false, cause })
  })

  const pause = () => {
    if (tap === undefined) stream?.pause()
    else tap.pause()
  }
  const resume = () => {
    if (tap === undefined) stream?.resume()
    else tap.resume()
  }

  const cancel = async (): Promise<void> => {
    discarding = true
    if (!over) {
      if (await connectionLost(sql)) return
      // Resolves once the server took the cancel request; the COPY then ends with 57014 (or had already ended).
      await untilSettledOrLost(sendCancel(query))
      await untilSettledOrLost(started)
    }
    resume()
    resumeSocket()
    await untilSettledOrLost(streamClosed())
  }

  return {
    pause,
    resume,
    fromSocket: () => tap?.direct() ?? false,
    done,
    cancel,
    started
  }
}

/** The message for a COPY that failed, with the cause mapped as the source maps every driver error. */
export const copyFailure = (cause: unknown, context: ErrorContext, doing: string): SourceError =>
  cause instanceof CopyEndedEarly
    ? sourceError(context, `the result ended before its last row was read (the connection failed)`)
    : fromPostgres(cause, context, doing)

/**
 * `startCopyOut` in the caller's scope: closing the scope before the COPY is over — even while it waits for the
 * server's first answer — cancels it and waits until the connection is free (see `CopyOut.cancel`). Failures of the
 * COPY, from its first answer on, reject `done` (map them with `copyFailure`). `onChunk` runs inside the socket's
 * data handler: it must not block; what it throws ends the COPY (and `done` rejects with it).
 */
export const copyOut = (
  sql: postgres.TransactionSql,
  text: string,
  onChunk: OnChunk,
  context: ErrorContext,
  doing = "reading rows"
): Effect.Effect<CopyOut, SourceError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.try({ try: () => startCopyOut(sql, text, onChunk), catch: (cause) => fromPostgres(cause, context, doing) }),
    (copy) => Effect.promise(copy.cancel)
  )
