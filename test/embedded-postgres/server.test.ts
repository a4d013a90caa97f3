import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import postgres from "postgres"
import { DEMO_ROW_COUNTS } from "../../src/embedded-postgres/demo-seed.js"
import { startEmbedded, startEmbeddedServer } from "../../src/embedded-postgres/server.js"

const isRoot = process.getuid?.() === 0

const tempDir = Effect.acquireRelease(
  Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "rivet-embedded-test-"))),
  (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const withSql = <A>(url: string, use: (sql: postgres.Sql) => Promise<A>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => postgres(url, { max: 1, onnotice: () => {} })),
    (sql) => Effect.promise(() => use(sql)),
    (sql) => Effect.promise(() => sql.end())
  )

const portOf = (url: string) => Number(new URL(url).port)

const acceptsConnections = (port: number) =>
  Effect.async<boolean>((resume) => {
    const socket = net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resume(Effect.succeed(true))
    })
    socket.once("error", () => resume(Effect.succeed(false)))
  })

/** Runs `effect` in a scope of its own, closed before this returns. */
const inOwnScope = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.scoped(effect)

/**
 * The PID of a live process unrelated to the server. It runs as the server's OS user, as postgres takes a PID it
 * may not signal (EPERM), or its parent's, for a stale one.
 */
const livePid = Effect.acquireRelease(
  Effect.sync(() => {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }))
    const asServerUser = isRoot ? { uid: id("-u"), gid: id("-g") } : {}
    const script = "setTimeout(() => {}, 600000)"
    return spawn(process.execPath, ["-e", script], { stdio: "ignore", cwd: "/", ...asServerUser })
  }),
  (child) =>
    Effect.async<void>((resume) => {
      child.once("exit", () => resume(Effect.void))
      child.kill("SIGKILL")
    })
).pipe(Effect.map((child) => child.pid ?? 0))

/** The PID of a process that has exited. */
const deadPid = Effect.async<number>((resume) => {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" })
  child.once("exit", () => resume(Effect.succeed(child.pid ?? 0)))
})

describe("startEmbedded", () => {
  it.scoped("initialises and seeds the demo, stops on scope close, and reuses the cluster on the next start", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir

      const scope = yield* Scope.make()
      const { url } = yield* startEmbedded({ dataDir }).pipe(Scope.extend(scope))
      expect(new URL(url).password).toMatch(/^[A-Za-z0-9_-]{32}$/)
      const withoutPassword = new URL(url)
      withoutPassword.password = ""
      const refused = yield* withSql(withoutPassword.toString(), (sql) => sql`select 1`.then(() => "", String))
      expect(refused).toContain("password")
      const counts = yield* withSql(url, async (sql) => {
        const result: Record<string, number> = {}
        for (const table of Object.keys(DEMO_ROW_COUNTS)) {
          const [row] = await sql<Array<{ n: number }>>`select count(*)::int as n from ${sql(table)}`
          result[table] = row?.n ?? -1
        }
        return result
      })
      expect(counts).toEqual(DEMO_ROW_COUNTS)
      const facts = yield* withSql(url, async (sql) => {
        const [row] = await sql<Array<{ delivered: number; no_notes: number; unpriced: number }>>`
          select (select count(*)::int from orders where status = 'delivered') as delivered,
                 (select count(*)::int from orders where notes is null) as no_notes,
                 (select count(*)::int from orders o
                   where total <> (select sum(round(quantity * unit_price * (1 - discount), 2))
                                   from order_items i where i.order_id = o.id)) as unpriced`
        await sql`update customers set name = 'Renamed Between Runs' where id = 1`
        return row
      })
      expect(facts).toEqual({ delivered: 7_500, no_notes: 12_000, unpriced: 0 })
      const versionFile = yield* Effect.promise(() => fs.stat(path.join(dataDir, "pg18", "PG_VERSION")))

      yield* Scope.close(scope, Exit.void)
      expect(yield* acceptsConnections(portOf(url))).toBe(false)
      expect(yield* Effect.promise(() => fs.readdir(path.join(dataDir, "pg18")))).not.toContain("postmaster.pid")

      const again = yield* inOwnScope(
        startEmbedded({ dataDir }).pipe(
          Effect.flatMap(({ url: second }) =>
            withSql(second, async (sql) => {
              const [customer] = await sql<Array<{ name: string }>>`select name from customers where id = 1`
              const [marker] = await sql<Array<{ n: number }>>`select count(*)::int as n from rivet_demo`
              return { name: customer?.name, markers: marker?.n }
            })
          )
        )
      )
      expect(again).toEqual({ name: "Renamed Between Runs", markers: 1 })
      const versionFileAfter = yield* Effect.promise(() => fs.stat(path.join(dataDir, "pg18", "PG_VERSION")))
      expect(versionFileAfter.ino).toBe(versionFile.ino)
      expect(versionFileAfter.mtimeMs).toBe(versionFile.mtimeMs)
    })
  )
})

describe("startEmbeddedServer", () => {
  it.scoped("starts on the given port, without a password when asked to trust local connections", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir
      const port = yield* Effect.async<number>((resume) => {
        const server = net.createServer().listen(0, "127.0.0.1", () => {
          const address = server.address()
          server.close(() => resume(Effect.succeed(typeof address === "object" && address ? address.port : 0)))
        })
      })
      const server = yield* startEmbeddedServer({ dataDir, port, ephemeral: true, trust: true })
      expect(server.port).toBe(port)
      expect(server.url).toBe(`postgres://postgres@127.0.0.1:${port}/postgres`)
      expect(yield* withSql(server.url, async (sql) => (await sql`select 1 as one`)[0])).toEqual({ one: 1 })
    })
  )
  it.scoped("starts over a stale postmaster.pid left by a server that is gone", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir
      const pidFile = path.join(dataDir, "pg18", "postmaster.pid")
      const left = yield* inOwnScope(
        startEmbeddedServer({ dataDir, ephemeral: true }).pipe(
          Effect.andThen(Effect.promise(() => fs.readFile(pidFile, "utf8")))
        )
      )
      // The lock file exactly as the server wrote it, as after a crash of the machine or a SIGKILL.
      yield* Effect.promise(() => fs.writeFile(pidFile, left))
      const first = yield* inOwnScope(startEmbeddedServer({ dataDir, ephemeral: true }))
      expect(first.port).toBeGreaterThan(0)

      const pid = yield* deadPid
      yield* Effect.promise(() => fs.writeFile(pidFile, left.replace(/^\d+/, String(pid))))
      yield* inOwnScope(startEmbeddedServer({ dataDir, ephemeral: true }))

      // A PID reused by an unrelated live process.
      const unrelated = yield* livePid
      yield* Effect.promise(() => fs.writeFile(pidFile, left.replace(/^\d+/, String(unrelated))))
      const server = yield* startEmbeddedServer({ dataDir, ephemeral: true })
      expect(yield* acceptsConnections(server.port)).toBe(true)
    })
  )

  it.scoped("refuses a data directory that a running server holds", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir
      const running = yield* startEmbeddedServer({ dataDir, ephemeral: true })
      const error = yield* Effect.flip(inOwnScope(startEmbeddedServer({ dataDir, ephemeral: true })))
      expect(error._tag).toBe("SourceError")
      expect(error.message).toContain("is in use by a running server")
      expect(error.hint).toContain("kill -INT")
      expect(error.retryable).toBe(true)
      expect(yield* acceptsConnections(running.port)).toBe(true)
    })
  )

  it.effect("stops the server when the fiber is interrupted after start-up", () =>
    Effect.gen(function* () {
      let port = 0
      const exit = yield* Effect.scoped(
        Effect.gen(function* () {
          const dataDir = yield* tempDir
          port = (yield* startEmbeddedServer({ dataDir, ephemeral: true })).port
          return yield* Effect.interrupt
        })
      ).pipe(Effect.exit)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(port).toBeGreaterThan(0)
      expect(yield* acceptsConnections(port)).toBe(false)
    })
  )

  it.scoped.skipIf(!isRoot)("as root, fails clearly when the OS user to run as does not exist", () =>
    Effect.gen(function* () {
      const dataDir = yield* tempDir
      const error = yield* Effect.flip(startEmbeddedServer({ dataDir, osUser: "rivet-no-such-user" }))
      expect(error.message).toContain('no OS user "rivet-no-such-user"')
      expect(error.hint).toContain("useradd")
    })
  )

  it.scoped.skipIf(!isRoot)("as root, fails clearly when the data directory is out of the OS user's reach", () =>
    Effect.gen(function* () {
      const parent = yield* tempDir
      yield* Effect.promise(() => fs.chmod(parent, 0o700))
      const error = yield* Effect.flip(startEmbeddedServer({ dataDir: path.join(parent, "demo") }))
      expect(error.message).toContain(`${parent} is not traversable`)
      expect(error.hint).toContain(`chmod o+x ${parent}`)
    })
  )
})
