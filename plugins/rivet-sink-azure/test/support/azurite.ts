import { type ChildProcess, spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as path from "node:path"

/** Azurite's well-known development account (public, documented by Microsoft; not a secret). */
export const AZURITE_ACCOUNT = "devstoreaccount1"
export const AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

export interface Azurite {
  /** `http://127.0.0.1:<port>/devstoreaccount1` */
  readonly accountUrl: string
  readonly connectionString: string
  readonly stop: () => Promise<void>
}

/** Azurite's development connection string for a blob endpoint. */
export const connectionStringFor = (accountUrl: string): string =>
  `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${accountUrl};`

const blobMain = (): string => {
  const require = createRequire(import.meta.url)
  return path.join(path.dirname(require.resolve("azurite/package.json")), "dist", "src", "blob", "main.js")
}

/**
 * Starts Azurite's blob service as a child process of this Node binary, on a free loopback port (port 0; the
 * port is read from its start-up line), keeping data in memory. `stop` kills it and waits for the exit.
 */
export const startAzurite = async (): Promise<Azurite> => {
  const child: ChildProcess = spawn(
    process.execPath,
    [
      blobMain(),
      "--blobHost", "127.0.0.1",
      "--blobPort", "0",
      // Azurite's default 5 s keep-alive lets it close an idle socket just as the client reuses it (ECONNRESET):
      // the runtime would retry that, but the conformance suite calls the driver without retries.
      "--blobKeepAliveTimeout", "600",
      "--silent",
      "--inMemoryPersistence",
      "--skipApiVersionCheck",
      "--disableTelemetry"
    ],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  let output = ""
  const port = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Azurite did not start within 30 s:\n${output}`)), 30_000)
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /listens on http:\/\/127\.0\.0\.1:(\d+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`Azurite exited with code ${code}:\n${output}`))
    })
  })
  // Keep draining its output so a chatty server never blocks on a full pipe.
  child.stdout?.resume()
  child.stderr?.resume()
  const accountUrl = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`
  return {
    accountUrl,
    connectionString: connectionStringFor(accountUrl),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}
