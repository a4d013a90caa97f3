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
  return canceller(query)
}
