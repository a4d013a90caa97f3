/**
 * Error codes of a connection that failed or dropped (Node's sockets and DNS, undici, the Azure SDK's request
 * pipeline): the store was not reached or did not answer, so the operation is worth retrying.
 */
const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ETIMEDOUT",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "REQUEST_SEND_ERROR"
])

/** Whether a client error's `code` says the network, not the store, failed (see `NETWORK_ERROR_CODES`). */
export const isNetworkErrorCode = (code: string | undefined): boolean => code !== undefined && NETWORK_ERROR_CODES.has(code)
