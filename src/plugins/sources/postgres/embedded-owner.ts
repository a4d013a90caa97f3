import * as fs from "node:fs/promises"
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

const readOwner = async (dataDir: string): Promise<Owner | undefined> => {
  try {
    const owner = JSON.parse(await fs.readFile(path.join(dataDir, OWNER_FILE), "utf8")) as Partial<Owner>
    const { pid, port, version } = owner
    return typeof pid === "number" && typeof port === "number" && typeof version === "string"
      ? { pid, port, version }
      : undefined
  } catch {
    return undefined
  }
}

/**
 * The server this process runs on `dataDir`, when asked from one of its worker threads; undefined otherwise (the
 * caller starts one). The cluster's lock file must still name a live postmaster on the recorded port, so a record
 * left by a killed run whose PID was reused is ignored.
 */
export const serverOfThisProcess = (dataDir: string): Effect.Effect<Owner | undefined> =>
  Effect.promise(async () => {
    if (isMainThread) return undefined
    const owner = await readOwner(dataDir)
    if (owner === undefined || owner.pid !== process.pid) return undefined
    const lock = path.join(dataDir, `pg${owner.version.split(".")[0] ?? ""}`, "postmaster.pid")
    const [pidLine = "", , , portLine = ""] = (await fs.readFile(lock, "utf8").catch(() => "")).split("\n")
    const postmaster = Number.parseInt(pidLine, 10)
    const running = Number.isInteger(postmaster) && postmaster > 0 && isAlive(postmaster)
    return running && Number.parseInt(portLine, 10) === owner.port ? owner : undefined
  })

/** Records this process as the server's owner until the scope closes (before the server stops). */
export const recordOwner = (dataDir: string, port: number, version: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      fs
        .writeFile(path.join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, port, version } satisfies Owner), {
          mode: 0o600
        })
        .catch(() => undefined)
    ),
    () => Effect.promise(() => fs.rm(path.join(dataDir, OWNER_FILE), { force: true }).catch(() => undefined))
  )
