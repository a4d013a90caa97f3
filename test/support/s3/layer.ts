import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { startS3Server, type S3TestServer } from "./server.js"

/** The loopback S3 server as a scoped service: started with its buckets when the layer is built, stopped with it. */
export class S3Server extends Context.Tag("test/support/s3/S3Server")<S3Server, S3TestServer>() {
  static readonly layer = (options: { readonly buckets: ReadonlyArray<string> } & NonNullable<Parameters<typeof startS3Server>[0]>) =>
    Layer.scoped(
      S3Server,
      Effect.acquireRelease(
        Effect.promise(async () => {
          const server = await startS3Server(options)
          for (const bucket of options.buckets) await server.createBucket(bucket)
          return server
        }),
        (server) => Effect.promise(() => server.stop())
      )
    )
}
