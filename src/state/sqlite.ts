import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as FileSystem from "@effect/platform/FileSystem"
import type Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import { describeCause, StateError } from "../core/errors.js"
import { installCommand, isPackageMissing } from "../core/optional-packages.js"
import { migrate } from "./migrations.js"
import type { SqlBackend, SqlExecutor, SqlRow, SqlValue } from "./sql.js"
import { retryingBackend } from "./retrying.js"
import { makeSqlStore } from "./sql-store.js"
import { StateStore } from "./store.js"

/**
 * How long one statement waits for another connection's write lock. better-sqlite3 waits synchronously — the event
 * loop (progress, uploads, the lease heartbeat) stands still meanwhile — so the wait is kept short and a lock held
 * longer is handled by the store retrying with the retry policy, which sleeps without blocking.
 */
export const BUSY_TIMEOUT_MS = 1000
const MEMORY = ":memory:"

const READ_ONLY_HINT =
  "Rivet keeps its state in a SQLite file beside the config, so that directory must be writable; on a read-only " +
  "mount (e.g. a Kubernetes ConfigMap) set RIVET_STATE_URL=postgres://… to keep the state in PostgreSQL instead"

const codeOf = (cause: unknown): string =>
  typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""

class MissingDirectory {
  constructor(readonly dir: string) {}
}

/** Maps a better-sqlite3 (or file system) failure to a StateError naming the file, with what to do about it. */
export const toStateError = (file: string, cause: unknown): StateError => {
  if (cause instanceof MissingDirectory) {
    return new StateError({
      message: `cannot create the state file ${file}: the directory ${cause.dir} does not exist`,
      hint: "create the directory first, or keep the state in PostgreSQL with RIVET_STATE_URL=postgres://…"
    })
  }
  const code = codeOf(cause)
  const reason = describeCause(cause)
  if (/^SQLITE_(CANTOPEN|READONLY|PERM)/.test(code) || ["EACCES", "EPERM", "EROFS"].includes(code)) {
    return new StateError({
      message: `cannot write the state file ${file}: the file or its directory is not writable (${reason})`,
      hint: READ_ONLY_HINT
    })
  }
  if (/^SQLITE_(BUSY|LOCKED)/.test(code)) {
    return new StateError({
      message: `the state file ${file} is locked by another process (${reason})`,
      hint: "another process holds the SQLite file's write lock (a rivet run, or a tool with an open transaction); run again once it has finished",
      retryable: true
    })
  }
  if (/^SQLITE_(CORRUPT|NOTADB)/.test(code)) {
    return new StateError({
      message: `${file} is not a readable Rivet state database (${reason})`,
      hint: "move the file aside to start with fresh state (cursors and checkpoints restart from scratch)"
    })
  }
  if (code === "ERR_DLOPEN_FAILED" || /NODE_MODULE_VERSION|compiled against a different Node\.js/.test(reason)) {
    return new StateError({
      message: `cannot load SQLite (the better-sqlite3 native module) for the state file ${file}: ${reason}`,
      hint: `the module was built for another Node.js version than this one (${process.version}): run \`npm rebuild better-sqlite3\` with this Node.js, or keep the state in PostgreSQL with RIVET_STATE_URL=postgres://…`
    })
  }
  return new StateError({ message: `state file ${file}: ${reason}`, hint: READ_ONLY_HINT })
}

/** better-sqlite3 is an optional peer dependency: loaded on first use, with what to do when it is not installed. */
const loadSqlite = (file: string): Effect.Effect<typeof Database, StateError> =>
  Effect.tryPromise({
    try: () => import("better-sqlite3").then((module) => module.default),
    catch: (cause) =>
      isPackageMissing(cause, "better-sqlite3")
        ? new StateError({
            message: `the SQLite state file ${file} needs the optional package better-sqlite3, which is not installed`,
            hint: `install it with \`${installCommand("better-sqlite3")}\`, or keep the state in PostgreSQL with RIVET_STATE_URL=postgres://…`
          })
        : toStateError(file, cause)
  })

const exists = (fs: FileSystem.FileSystem, file: string) => fs.exists(file).pipe(Effect.orElseSucceed(() => false))

/** Before a new file is created: its directory exists and is writable, or a StateError saying what to do. */
const checkCreatable = (file: string): Effect.Effect<void, StateError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    if (file === MEMORY || (yield* exists(fs, file))) return
    const dir = path.dirname(path.resolve(file))
    if (!(yield* exists(fs, dir))) return yield* Effect.fail(toStateError(file, new MissingDirectory(dir)))
    yield* Effect.mapError(fs.access(dir, { writable: true }), (error) =>
      toStateError(file, error._tag === "SystemError" && error.cause !== undefined ? error.cause : error)
    )
  })

/** Opens (creating when absent) the database file, with the checks that give a clear message on read-only mounts. */
const openDatabase = (file: string): Effect.Effect<Database.Database, StateError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const Database = yield* loadSqlite(file)
    yield* checkCreatable(file)
    return yield* Effect.try({
      try: () => {
        const db = new Database(file, { timeout: BUSY_TIMEOUT_MS })
        try {
          db.pragma("journal_mode = WAL")
          db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
          db.pragma("foreign_keys = ON")
        } catch (cause) {
          db.close()
          throw cause
        }
        return db
      },
      catch: (cause) => toStateError(file, cause)
    })
  })

const toParams = (params: ReadonlyArray<SqlValue> | undefined): Array<SqlValue> => (params ? [...params] : [])

/** Most statements a connection keeps prepared; the store's SQL is a fixed set of texts, well below it. */
const STATEMENT_CACHE_SIZE = 64

/**
 * Prepares each SQL text once per connection: the store runs the same few statements many times (recording the
 * 10 900 parts of a partitioned run prepared the same INSERT 10 900 times).
 */
const cachedStatements = (db: Database.Database) => {
  const cache = new Map<string, Database.Statement>()
  return (sql: string): Database.Statement => {
    let statement = cache.get(sql)
    if (statement === undefined) {
      statement = db.prepare(sql)
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!)
      cache.set(sql, statement)
    }
    return statement
  }
}

/**
 * better-sqlite3 is synchronous and one connection serves every fiber, so a semaphore keeps one fiber's
 * transaction from taking in another fiber's statements.
 */
const makeBackend = (db: Database.Database, file: string): Effect.Effect<SqlBackend> =>
  Effect.map(Effect.makeSemaphore(1), (lock) => {
    const statement = cachedStatements(db)
    const executor: SqlExecutor = {
      all: (sql, params) =>
        Effect.try({
          try: () => statement(sql).all(...toParams(params)) as ReadonlyArray<SqlRow>,
          catch: (cause) => toStateError(file, cause)
        }),
      run: (sql, params) =>
        Effect.try({
          try: () => statement(sql).run(...toParams(params)).changes,
          catch: (cause) => toStateError(file, cause)
        })
    }
    const exec = (sql: string) => executor.run(sql)
    const transaction = <A>(body: (tx: SqlExecutor) => Effect.Effect<A, StateError>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          // IMMEDIATE takes the write lock up front: a deferred transaction upgrading later can fail with BUSY.
          yield* exec("BEGIN IMMEDIATE")
          const exit = yield* Effect.exit(restore(body(executor)))
          if (Exit.isFailure(exit)) {
            yield* Effect.ignore(exec("ROLLBACK"))
            return yield* exit
          }
          yield* exec("COMMIT").pipe(Effect.tapError(() => Effect.ignore(exec("ROLLBACK"))))
          return exit.value
        })
      ).pipe(lock.withPermits(1))
    return {
      location: file,
      all: (sql, params) => lock.withPermits(1)(executor.all(sql, params)),
      run: (sql, params) => lock.withPermits(1)(executor.run(sql, params)),
      transaction
    }
  })

/**
 * The state store in a SQLite file (created on first use, WAL mode) or in memory (`":memory:"`, for tests and
 * programs that keep no state). The database closes when the layer's scope closes. It needs nothing from the
 * program (`sqliteStateLayer(":memory:")` is passed as it is), so it brings Node's file system for its checks.
 */
export const sqliteStateLayer = (file: string): Layer.Layer<StateStore, StateError> =>
  Layer.provide(sqliteStateLayerOn(file), NodeFileSystem.layer)

const sqliteStateLayerOn = (file: string): Layer.Layer<StateStore, StateError, FileSystem.FileSystem> =>
  Layer.scoped(
    StateStore,
    Effect.gen(function* () {
      const db = yield* Effect.acquireRelease(openDatabase(file), (db) => Effect.sync(() => db.close()))
      const backend = retryingBackend(yield* makeBackend(db, file))
      yield* migrate(backend)
      return makeSqlStore(backend)
    })
  )
