import * as FileSystem from "@effect/platform/FileSystem"
import * as path from "node:path"
import { isMainThread } from "node:worker_threads"
import * as Effect from "effect/Effect"

/**
 * Which process runs the embedded server of a data directory. Chunk worker threads (src/engine/lanes) build their
 * own source from the config, so they would start the embedded server a second time: instead, a worker thread of
 * the process that runs it shares it — never starting another, never stopping it (only its starter does).
 */

const OWNER_FILE = "server-owner.json"

interface Owner {
  readonly pid: number
  readonly port: number
  readonly version: string
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (cause) {
    return (cause as NodeJS.ErrnoException).code === "EPERM"
  }
}

const readOwner = (fs: FileSystem.FileSystem, dataDir: string): Effect.Effect<Owner | undefined> =>
  fs.readFileString(path.join(dataDir, OWNER_FILE)).pipe(
    Effect.flatMap((text) => Effect.try(() => JSON.parse(text) as Partial<Owner> | null)),
    Effect.map((owner) => {
      const { pid, port, version } = owner ?? {}
      return typeof pid === "number" && typeof port === "number" && typeof version === "string"
        ? { pid, port, version }
        : undefined
    }),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * The server this process runs on `dataDir`, when asked from one of its worker threads; undefined otherwise (the
 * caller starts one). The cluster's lock file must still name a live postmaster on the recorded port, so a record
 * left by a killed run whose PID was reused is ignored.
 */
export const serverOfThisProcess = (dataDir: string): Effect.Effect<Owner | undefined, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    if (isMainThread) return undefined
    const fs = yield* FileSystem.FileSystem
    const owner = yield* readOwner(fs, dataDir)
    if (owner === undefined || owner.pid !== process.pid) return undefined
    const lock = path.join(dataDir, `pg${owner.version.split(".")[0] ?? ""}`, "postmaster.pid")
    const [pidLine = "", , , portLine = ""] = (yield* fs.readFileString(lock).pipe(Effect.orElseSucceed(() => ""))).split("\n")
    const postmaster = Number.parseInt(pidLine, 10)
    const running = Number.isInteger(postmaster) && postmaster > 0 && isAlive(postmaster)
    return running && Number.parseInt(portLine, 10) === owner.port ? owner : undefined
  })

/** Records this process as the server's owner until the scope closes (before the server stops). */
export const recordOwner = (dataDir: string, port: number, version: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    Effect.acquireRelease(
      Effect.ignore(
        fs.writeFileString(path.join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, port, version } satisfies Owner), {
          mode: 0o600
        })
      ),
      () => Effect.ignore(fs.remove(path.join(dataDir, OWNER_FILE), { force: true }))
    )
  )
