import { afterAll, beforeAll, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import { S3Config } from "../../../../src/plugins/sinks/s3/config.js"
import s3Sink from "../../../../src/plugins/sinks/s3/index.js"
import { runSinkConformance } from "../../../../src/testing/index.js"
import { startS3Server, type S3TestServer } from "../../../support/s3/server.js"
import { KEY_ENV, keyEnv } from "./harness.js"

const BUCKET = "rivet-s3-conformance"
const PREFIX = "suite/"
let server: S3TestServer

beforeAll(async () => {
  server = await startS3Server()
  await server.createBucket(BUCKET)
})
afterAll(async () => {
  await server.stop()
})

const layerFor = (bucket: string) =>
  s3Sink.make(
    Schema.decodeUnknownSync(S3Config)({
      bucket,
      region: server.region,
      endpoint: server.endpoint,
      prefix: PREFIX,
      part_size: "5MiB",
      ...KEY_ENV
    }),
    { configDir: ".", env: keyEnv(server) }
  )

runSinkConformance("S3 sink conformance", {
  makeLayer: () => layerFor(BUCKET),
  readBack: (key) => server.getObject(BUCKET, `${PREFIX}${key}`).catch(() => undefined),
  listKeys: async () =>
    (await server.listObjects(BUCKET, PREFIX)).map((object) => object.key.slice(PREFIX.length)),
  pendingUploads: async () => (await server.listMultipartUploads(BUCKET)).length,
  missingDestinationLayer: () => layerFor("rivet-s3-conformance-missing"),
  blockCount: 3
}, { describe, it })
