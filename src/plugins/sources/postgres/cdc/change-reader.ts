import type { Duplex } from "node:stream"
import { type Batch, batchByteLength, type BatchSchema } from "../../../../core/batch.js"
import type { FeedEnd } from "../../../../core/plugin.js"
import { type ChangeTarget, PgoutputDecoder, parseRelation, type Relation } from "./pgoutput.js"
import { lsnAt } from "./positions.js"
import { type Replication, statusUpdate } from "./replication.js"

/**
 * Reads a CopyBoth replication stream one CopyData message at a time (the socket pauses while nothing is asked:
 * backpressure reaches the walsender), hands pgoutput messages to the decoder and queues its batches, and ends at
 * the first transaction boundary that satisfies the stop rule. Low-level on purpose: one promise per message and
 * no Effect in between (see bench/cdc/LOG.md for what per-message overhead costs).
 */

/** How the reader treats the export's table: plans a Relation message's columns (async: catalog types). */
export interface TablePlanner {
  /** Whether the relation is the export's table (others in the publication are skipped). */
  readonly isExported: (relation: Relation) => boolean
  readonly plan: (relation: Relation) => Promise<ChangeTarget>
  /** Whether two targets write the same schema. */
  readonly sameSchema: (a: BatchSchema, b: BatchSchema) => boolean
}

export interface StopRule {
  /** Stop at the first boundary at or past this position; undefined: read on. */
  readonly target: number | undefined
  readonly maxEvents: number | undefined
  /** Stop at the first boundary after this time (epoch ms). */
  readonly deadline?: number | undefined
  /** Stop at the next boundary once aborted. */
  readonly signal?: AbortSignal | undefined
}

export class MidTransactionSchemaChange extends Error {}

/** Messages held before the stream is paused (each CopyData is one `data` chunk; `read()` would join them). */
const HIGH_WATER = 256

/**
 * The stream's CopyData messages one at a time. `data` events keep each message its own chunk (an async iterator's
 * `read()` would concatenate what is buffered); the stream is paused while messages wait, so the socket and then the
 * walsender stop.
 */
class Messages {
  private readonly held: Array<Buffer> = []
  private failure: unknown
  private ended = false
  private wake: (() => void) | undefined

  constructor(
    private readonly stream: Duplex,
    ended: Promise<unknown>
  ) {
    void ended.then((cause) => {
      if (cause === undefined) return
      this.failure ??= cause
      this.notify()
    })
    stream.on("data", (message: Buffer) => {
      this.held.push(message)
      if (this.held.length >= HIGH_WATER) stream.pause()
      this.notify()
    })
    stream.on("error", (cause) => {
      this.failure ??= cause
      this.notify()
    })
    stream.on("close", () => {
      this.ended = true
      this.notify()
    })
  }

  private notify(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  /** The next held message, if one is there (the stream resumes once none is left); throws once the stream failed. */
  poll(): Buffer | undefined {
    const message = this.held.shift()
    if (message !== undefined) {
      if (this.held.length === 0 && this.stream.isPaused()) this.stream.resume()
      return message
    }
    if (this.failure !== undefined) throw this.failure
    if (this.ended) throw new Error("the replication stream ended before the target position")
    return undefined
  }

  /** Resolves once a message arrived or the stream ended. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.wake = resolve))
  }
}

const STATUS_INTERVAL_MS = 1000

/** Batches an outlet may hold unread before the reader waits for its consumer (each at most `batchBytes`). */
const OUTLET_BATCHES = 8

/** One table's share of the stream: whose rows go where, and from which position they are new. */
export interface OutletSpec {
  readonly planner: TablePlanner
  /**
   * The outlet's published position: transactions committed at or before it are skipped (read again only because
   * another outlet of the stream published less).
   */
  readonly from: number
  /** The schema already given (a snapshot's): Relation messages must match it. */
  readonly schema: BatchSchema | undefined
}

class Outlet {
  readonly queue: Array<Batch> = []
  schema: BatchSchema | undefined
  /** Its relation's planned target, held while its transactions are skipped (defined once they are new). */
  held: { readonly relation: Relation; readonly target: ChangeTarget } | undefined
  oid: number | undefined
  skipping: boolean
  /** Its consumer waits for a batch. */
  waiting = false
  /** Its consumer gave up: its rows are dropped, and it holds no one up. */
  detached = false
  drained: (() => void) | undefined

  constructor(readonly spec: OutletSpec) {
    this.schema = spec.schema
    this.skipping = true
  }
}

/**
 * Reads one replication stream for one or more tables (outlets), each table's batches queued for its own consumer.
 * Whichever consumer asks pumps the stream for all; an outlet holding OUTLET_BATCHES unread batches pauses the
 * pump until its consumer takes one, so the slowest consumer sets the pace and memory stays bounded.
 */
export class ChangeReader {
  private readonly messages: Messages
  private readonly decoder: PgoutputDecoder
  private readonly outlets: ReadonlyArray<Outlet>
  private ended: { position: number; end: FeedEnd } | undefined
  private lastEnd: number
  private lastMessageAt = Date.now()
  private readonly timer: ReturnType<typeof setInterval>
  private pumping: Promise<void> | undefined
  private failure: { readonly cause: unknown } | undefined

  private readonly stream: Duplex

  constructor(
    replication: Replication,
    /** Where the stream started: all the slot may release, and where a feed with no change ends. */
    private readonly confirmed: number,
    outlets: ReadonlyArray<OutletSpec>,
    private readonly stop: StopRule,
    options: { readonly batchRows: number; readonly batchBytes: number }
  ) {
    this.stream = replication.stream
    this.messages = new Messages(replication.stream, replication.ended)
    const stream = replication.stream
    this.decoder = new PgoutputDecoder(options)
    this.outlets = outlets.map((spec) => new Outlet(spec))
    this.lastEnd = confirmed
    // Status updates keep the walsender from timing out while the pipeline is slow, and ask it, when nothing
    // arrives, how far it has sent: a keepalive past the target ends a feed whose last change came earlier.
    this.timer = setInterval(() => {
      if (this.ended !== undefined || stream.destroyed) return
      stream.write(statusUpdate(this.confirmed, Date.now() - this.lastMessageAt >= STATUS_INTERVAL_MS))
    }, STATUS_INTERVAL_MS)
    this.timer.unref()
    stream.write(statusUpdate(this.confirmed, true))
  }

  /**
   * The schema of each outlet: the given one, else its first Relation message's, read ahead until every outlet has
   * one, the feed ends, or the outlets hold `readAheadBytes` of batches; else `fallback(i)`.
   */
  async schemas(fallback: (outlet: number) => Promise<BatchSchema>, readAheadBytes: number): Promise<ReadonlyArray<BatchSchema>> {
    await this.readUntil(() => this.outlets.every((outlet) => outlet.schema !== undefined) || this.queuedBytes() >= readAheadBytes)
    const schemas: Array<BatchSchema> = []
    for (const [i, outlet] of this.outlets.entries()) schemas.push((outlet.schema ??= await fallback(i)))
    return schemas
  }

  /** Outlet `i`'s next batch, or undefined once the feed has ended. */
  async next(i: number): Promise<Batch | undefined> {
    const outlet = this.outlets[i]!
    for (;;) {
      const batch = outlet.queue.shift()
      if (batch !== undefined) {
        const drained = outlet.drained
        outlet.drained = undefined
        drained?.()
        return batch
      }
      if (this.failure !== undefined) throw this.failure.cause
      if (this.ended !== undefined) return undefined
      outlet.waiting = true
      this.pumping ??= this.pump().finally(() => (this.pumping = undefined))
      await this.pumping.catch(() => undefined)
      outlet.waiting = false
    }
  }

  /** Outlet `i`'s consumer gave up: the others go on without it. */
  detach(i: number): void {
    const outlet = this.outlets[i]!
    outlet.detached = true
    outlet.queue.length = 0
    const drained = outlet.drained
    outlet.drained = undefined
    drained?.()
  }

  /**
   * Reads until a waiting consumer has a batch, the end, or an outlet is full: then it waits for that outlet's
   * consumer to take one.
   */
  private async pump(): Promise<void> {
    const full = this.outlets.find((outlet) => outlet.queue.length >= OUTLET_BATCHES)
    if (full !== undefined) {
      await new Promise<void>((resolve) => (full.drained = resolve))
      return
    }
    try {
      await this.readUntil(() =>
        this.outlets.some((outlet) => (outlet.waiting && outlet.queue.length > 0) || outlet.queue.length >= OUTLET_BATCHES)
      )
    } catch (cause) {
      this.failure ??= { cause }
      throw cause
    }
  }

  private queuedBytes(): number {
    let bytes = 0
    for (const outlet of this.outlets) for (const batch of outlet.queue) bytes += batchByteLength(batch)
    return bytes
  }

  /**
   * Handles held messages in a plain loop until `done` holds or the feed ends, awaiting only for the next message
   * when none is held and for planning a Relation: a promise per message costs more than decoding it.
   */
  private async readUntil(done: () => boolean): Promise<void> {
    while (!done() && this.ended === undefined && this.failure === undefined) {
      const message = this.messages.poll()
      if (message === undefined) await this.messages.wait()
      else {
        const planning = this.handle(message)
        if (planning !== undefined) await planning
      }
    }
  }

  /** Where outlet `i`'s feed ended, once its last batch was taken: never before its own published position. */
  reached(i: number): { readonly position: number; readonly end: FeedEnd } | undefined {
    const outlet = this.outlets[i]!
    if (outlet.queue.length > 0 || this.ended === undefined) return undefined
    return { position: Math.max(this.ended.position, outlet.spec.from), end: this.ended.end }
  }

  close(): void {
    clearInterval(this.timer)
  }

  private finish(position: number, end: FeedEnd): void {
    this.decoder.flush()
    this.drain()
    this.ended = { position, end }
    clearInterval(this.timer)
  }

  private drain(): void {
    for (const event of this.decoder.take()) {
      if (event._tag === "Rows") {
        const outlet = this.outlets.find((candidate) => candidate.oid === event.oid)
        if (outlet !== undefined && !outlet.detached) outlet.queue.push(event.batch)
      }
      else if (event._tag === "Commit") this.committed(event.endLsn)
      if (this.ended !== undefined) return
    }
  }

  /** Why the feed ends at a transaction boundary at `position`, if it does. */
  private endAt(position: number): FeedEnd | undefined {
    const { target, maxEvents, deadline, signal } = this.stop
    if (target !== undefined && position >= target) return { _tag: "Current" }
    if (maxEvents !== undefined && this.decoder.changes >= maxEvents) return { _tag: "MaxEvents" }
    if (signal?.aborted === true) return { _tag: "Stopped" }
    if (deadline !== undefined && Date.now() >= deadline) return { _tag: "Window" }
    return undefined
  }

  private committed(endLsn: number): void {
    this.lastEnd = endLsn
    const end = this.endAt(endLsn)
    if (end !== undefined) this.finish(endLsn, end)
  }

  /** Handles one CopyData message; a promise only when a Relation message is being planned. */
  private handle(message: Buffer): Promise<void> | undefined {
    this.lastMessageAt = Date.now()
    if (message[0] === 0x77) {
      // XLogData: 'w', start, end, send time; the pgoutput message from byte 25.
      const kind = message[25]
      if (kind === 0x52) return this.relation(parseRelation(message, 25))
      // Begin: its final LSN (the commit's) tells whether the transaction is new to each outlet.
      if (kind === 0x42 && message.length >= 34) this.begin(lsnAt(message, 26))
      this.decoder.message(message, 25, message.length)
      this.drain()
      return undefined
    }
    if (message[0] === 0x6b) {
      // Keepalive: 'k', the server's sent position, time, reply requested.
      const sent = lsnAt(message, 1)
      if (message[17] === 1) this.stream.write(statusUpdate(this.confirmed, false))
      if (this.decoder.inTransaction) return
      // Between transactions every change before `sent` has arrived: the feed may end there, past WAL of other tables.
      const position = Math.max(this.lastEnd, this.stop.target === undefined ? sent : Math.min(sent, this.stop.target))
      const end = this.endAt(sent)
      if (end !== undefined) this.finish(position, end)
    }
  }

  /** An outlet's transactions are new from the first one committing at or after its published position. */
  private begin(commitLsn: number): void {
    for (const outlet of this.outlets) {
      if (!outlet.skipping || commitLsn < outlet.spec.from) continue
      outlet.skipping = false
      if (outlet.held !== undefined) this.define(outlet, outlet.held.relation, outlet.held.target)
      outlet.held = undefined
    }
  }

  private async relation(relation: Relation): Promise<void> {
    const outlet = this.outlets.find((candidate) => candidate.spec.planner.isExported(relation))
    if (outlet === undefined) {
      this.decoder.define(relation, undefined)
      return
    }
    const target = await outlet.spec.planner.plan(relation)
    outlet.oid = relation.oid
    if (outlet.skipping) {
      // Not written yet: its transactions are published already; the target waits for the first new one.
      this.decoder.define(relation, undefined)
      outlet.held = { relation, target }
      return
    }
    this.define(outlet, relation, target)
  }

  private define(outlet: Outlet, relation: Relation, target: ChangeTarget): void {
    if (outlet.schema !== undefined && !outlet.spec.planner.sameSchema(outlet.schema, target.schema)) {
      if (this.decoder.rowsInTransaction > 0) {
        throw new MidTransactionSchemaChange(
          `table ${relation.schema}.${relation.name} changed its columns inside a transaction that also changed its rows`
        )
      }
      // The new shape starts a new run: this one ends at the last whole transaction before it.
      const columns = relation.columns.map((column) => column.name).join(", ")
      this.finish(this.lastEnd, { _tag: "SchemaChanged", detail: `table ${relation.schema}.${relation.name} now has columns ${columns}` })
      return
    }
    outlet.schema ??= target.schema
    this.decoder.define(relation, { ...target, schema: outlet.schema })
  }
}
