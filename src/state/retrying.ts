import type { StateError } from "../core/errors.js"
import { DEFAULT_RETRY_POLICY, type RetryPolicy, withRetry } from "../core/retry.js"
import type { SqlBackend } from "./sql.js"

const isTransient = (error: StateError): boolean => error.retryable === true

/**
 * The retry policy with more attempts: a state write comes after the data is published, and giving up then costs
 * a run's worth of duplicates, so it outwaits a lock or a failover of about half a minute.
 */
export const STATE_RETRY_POLICY: RetryPolicy = { ...DEFAULT_RETRY_POLICY, maxRetries: 7 }

/**
 * The backend with every statement and transaction retried, with the retry policy, while it fails with a
 * transient error (a locked SQLite file, a lost PostgreSQL connection). A transaction is retried whole: its body
 * runs again from the start, so every store method is written to give the same result when repeated.
 */
export const retryingBackend = (db: SqlBackend, policy: RetryPolicy = STATE_RETRY_POLICY): SqlBackend => ({
  ...db,
  all: (sql, params) => withRetry(db.all(sql, params), policy, () => {}, isTransient),
  run: (sql, params) => withRetry(db.run(sql, params), policy, () => {}, isTransient),
  transaction: (body) => withRetry(db.transaction(body), policy, () => {}, isTransient)
})
