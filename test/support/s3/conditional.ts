import { encodeKey } from "./multipart.js"
import type { Upstream } from "./upstream.js"
import { s3Error } from "./xml.js"

/**
 * S3's conditional PutObject (`If-None-Match: *`), which s3rver ignores: the front end runs conditional writes of one
 * key one after another, and answers 412 PreconditionFailed when an object is there already — so of two writers
 * racing for a key exactly one gets it, as on S3.
 */
export class ConditionalWrites {
  private readonly queues = new Map<string, Promise<unknown>>()

  constructor(private readonly upstream: Upstream) {}

  /** Runs `write` (the PutObject) only when `bucket/key` is free, after any earlier conditional write of the key. */
  createOnly(bucket: string, key: string, write: () => Promise<void>): Promise<void> {
    const id = `${bucket}/${key}`
    const turn = (this.queues.get(id) ?? Promise.resolve()).catch(() => undefined).then(async () => {
      const head = await this.upstream.fetch("HEAD", `/${encodeURIComponent(bucket)}/${encodeKey(key)}`)
      if (head.status === 200) throw s3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold", { Condition: "If-None-Match" })
      await write()
    })
    this.queues.set(id, turn)
    void turn.finally(() => {
      if (this.queues.get(id) === turn) this.queues.delete(id)
    }).catch(() => undefined)
    return turn
  }
}
