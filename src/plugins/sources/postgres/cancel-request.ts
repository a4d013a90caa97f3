/** What a postgres.js 3.4.9 query exposes beyond its types for cancelling it. */
export interface CancellableQuery {
  /** Set while the query runs on its connection. */
  readonly active?: boolean
  readonly cancel: () => unknown
  /** postgres.js' pool function that sends the cancel request; its promise settles once the server took it. */
  canceller?: ((query: unknown) => Promise<void>) | null
}

/**
 * Sends the cancel request for `query` and resolves once the server has taken it (the request's connection closed).
 * postgres.js 3.4.9's `query.cancel()` returns null, not that promise: not waiting for it, a statement that ends by
 * itself meanwhile frees its connection with the request still on its way, and the request then cancels the
 * connection's next statement — another unit's or export's (hazard 4 in docs/sources/postgres.md).
 */
export const sendCancel = (query: CancellableQuery): Promise<void> => {
  // Not running: over (nothing to cancel), or queued behind another statement, which postgres.js cancels once it
  // starts. Its canceller would then settle only when the query becomes active — for a finished one, never.
  if (query.active !== true) {
    query.cancel()
    return Promise.resolve()
  }
  const canceller = query.canceller
  if (typeof canceller !== "function") return Promise.resolve()
  query.canceller = null
  // Over TLS, postgres.js 3.4.9 never settles this promise: its cancel connection listens for `close` on the plain
  // socket, whose listeners it removes when it switches to TLS. The request itself is sent and served (the server
  // closes that connection at once), so after CANCEL_SETTLE_MS it is taken to have arrived; without TLS the promise
  // settles first and the timer is cleared.
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, CANCEL_SETTLE_MS)
    timer.unref?.()
    canceller(query).then(
      () => (clearTimeout(timer), resolve()),
      (cause: unknown) => (clearTimeout(timer), reject(cause))
    )
  })
}

/** How long a cancel request whose connection never reports its end (TLS, above) is waited for. */
export const CANCEL_SETTLE_MS = 2_000
