/**
 * Runs the S3 test server as a standalone process (benchmarks, manual checks):
 *
 *   npx vite-node test/support/s3/serve.ts -- bucket-a bucket-b
 *
 * Creates the named buckets, prints one JSON line `{ endpoint, region, accessKeyId, secretAccessKey }` on stdout,
 * and serves until SIGTERM/SIGINT, then stops (deleting its temp directories).
 */
import { startS3Server } from "./server.js"

const buckets = process.argv.slice(2).filter((arg) => arg !== "--")
const server = await startS3Server()
try {
  for (const bucket of buckets) await server.createBucket(bucket)
} catch (error) {
  await server.stop()
  throw error
}
process.stdout.write(
  `${JSON.stringify({ endpoint: server.endpoint, region: server.region, ...server.credentials })}\n`
)

let stopping = false
const stop = () => {
  if (stopping) return
  stopping = true
  server.stop().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`stopping the S3 test server failed: ${String(error)}\n`)
      process.exit(1)
    }
  )
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
