import * as Layer from "effect/Layer"
import { defineSink, SinkDriver } from "../../../core/plugin.js"
import { S3Config } from "./config.js"
import { makeS3Driver } from "./driver.js"

/**
 * The `s3` destination: AWS S3, or a loopback S3-compatible emulator (MinIO). Objects are written with
 * multipart uploads whose parts the runtime sends (and retries) block by block; small objects, manifest.json and
 * _SUCCESS with one PutObject.
 */
export default defineSink({
  type: "s3",
  config: S3Config,
  description: "AWS S3 or a loopback S3-compatible emulator (MinIO): multipart uploads, manifest.json and _SUCCESS.",
  make: (config, context) => Layer.scoped(SinkDriver, makeS3Driver(config, context))
})

export { S3Config } from "./config.js"
export { checkEndpoint } from "./endpoint-guard.js"
export { makeS3Driver, type S3DriverOptions } from "./driver.js"
