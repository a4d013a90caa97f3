import postgres from "postgres"

/**
 * Statements a chunk or page reads its rows with: a COPY of the export's query wrapped with the unit's filter, order
 * or limit — binary, or CSV rendered by the server (the same SELECT without COPY is only described, before).
 */
export const UNIT_STATEMENT = "COPY (SELECT % FROM (%"

export interface KillerOptions {
  /** The `application_name` the export's source connects with (set a unique one per test). */
  readonly app: string
  /** LIKE pattern of the statements to terminate. */
  readonly statement: string
  /** Terminate only once this holds for the round about to fire (0, 1, …); checked before every look. */
  readonly when?: (round: number) => boolean
  /**
   * Where the statement is. A COPY's backend stays `active` until its last row is sent: `streaming` (default) is any
   * moment of that, `between fetches` only while it waits for the client (`ClientWrite`: the client stopped reading
   * while the pipeline works on a batch — `ClientRead` for a cursor's next fetch), `after the last fetch` once the
   * result is complete and the transaction is still open (`idle in transaction`, while the unit writes its last part).
   */
  readonly phase?: "streaming" | "between fetches" | "after the last fetch"
  /** Wait until at least this many such statements run at once, then terminate them all (default 1). */
  readonly together?: number
  /** How many times to terminate (default 1; `Infinity`: every statement, until stopped). */
  readonly rounds?: number
}

export interface Killer {
  /** Stops watching; resolves with the backends terminated in each round (pids). */
  readonly stop: () => Promise<ReadonlyArray<ReadonlyArray<number>>>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Watches `pg_stat_activity` from a connection of its own and calls `pg_terminate_backend` on the export's
 * backends while they are in `phase` of a matching statement. Selecting and terminating is one statement, so the
 * window in which the backend could move on in between is tiny. Transactions younger than 30 ms are spared: the unit's
 * describe of its statement shows the same text, and these tests are about rows. (A connection terminated during
 * that exchange can leave the postgres.js query unsettled; test/plugins/sources/postgres/session-lost.test.ts
 * covers that.)
 */
export const startKiller = (url: string, options: KillerOptions): Killer => {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const together = options.together ?? 1
  const rounds = options.rounds ?? 1
  const phase = options.phase ?? "streaming"
  const state = phase === "after the last fetch" ? "idle in transaction" : "active"
  const waitingForClient = phase === "between fetches"
  const killed: Array<Array<number>> = []
  const terminated = new Set<number>()
  let stopped = false
  const loop = (async () => {
    while (!stopped && killed.length < rounds) {
      if (options.when?.(killed.length) ?? true) {
        const rows = await sql<Array<{ pid: number; terminated: boolean }>>`
          WITH running AS (
            SELECT pid FROM pg_stat_activity
            WHERE application_name = ${options.app} AND state = ${state} AND query LIKE ${options.statement}
              AND (NOT ${waitingForClient} OR wait_event IN ('ClientRead', 'ClientWrite')) AND pid <> pg_backend_pid()
              AND clock_timestamp() - xact_start > interval '30 milliseconds'
          )
          SELECT pid, pg_terminate_backend(pid) AS terminated FROM running
          WHERE (SELECT count(*) FROM running) >= ${together}`
        // A terminated backend stays listed until it has exited and may be hit again: count each backend once.
        const pids = rows.filter((row) => row.terminated && !terminated.has(row.pid)).map((row) => row.pid)
        for (const pid of pids) terminated.add(pid)
        if (pids.length > 0) killed.push(pids)
      }
      await sleep(3)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await loop
      await sql.end()
      return killed
    }
  }
}

/**
 * Counts the distinct executions (backend, start time) of matching statements that stayed active for at least
 * `minimumMs` until stopped. The floor skips the instant in which the same text is parsed and described (before the
 * cursor opens), which a 20 ms poll on a busy machine can catch as an execution of its own.
 */
export const watchExecutions = (url: string, app: string, statement: string, minimumMs = 200) => {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  const seen = new Set<string>()
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const rows = await sql<Array<{ pid: number; started: string }>>`
        SELECT pid, query_start::text AS started FROM pg_stat_activity
        WHERE application_name = ${app} AND state = 'active' AND query LIKE ${statement} AND pid <> pg_backend_pid()
          AND clock_timestamp() - query_start >= ${minimumMs} * interval '1 millisecond'`
      for (const row of rows) seen.add(`${row.pid}@${row.started}`)
      await sleep(20)
    }
  })()
  return {
    stop: async () => {
      stopped = true
      await loop
      await sql.end()
      return seen.size
    }
  }
}
