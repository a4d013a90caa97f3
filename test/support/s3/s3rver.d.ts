// Minimal typings for s3rver 3.7.1 (the package ships none); only what the test server uses.
declare module "s3rver" {
  import type { Server } from "node:http"

  interface S3rverOptions {
    address?: string
    port?: number
    silent?: boolean
    directory?: string
    resetOnClose?: boolean
    allowMismatchedSignatures?: boolean
    vhostBuckets?: boolean
    configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>
  }

  class S3rver {
    constructor(options?: S3rverOptions)
    run(): Promise<{ address: string; port: number; family: string }>
    close(): Promise<void>
    readonly httpServer: Server | undefined
  }

  export = S3rver
}
