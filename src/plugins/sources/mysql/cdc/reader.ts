import ZongJi from "@vlasky/zongji"
import { type Batch, batchFromColumns, type BatchSchema } from "../../../../core/batch.js"
import { ChangeColumnsBuilder, type ChangeOp } from "../../../../core/columns/change-columns.js"
import type { ColumnData } from "../../../../core/columns/data.js"
import type { SourceError } from "../../../../core/errors.js"
import type { FeedEnd } from "../../../../core/plugin.js"
import { BadValue, type ColumnDecoder, columnDecoder, ZeroDate } from "../decode.js"
import { connectionClosed, type ErrorContext, fromMysql, sourceError } from "../errors.js"
import { connectionOptions, type MysqlTarget } from "../session.js"
import type { ColumnPlan } from "../types.js"
import { type BinlogPosition, comparePositions, positionText } from "./position.js"
import { appendValue } from "./values.js"

/** When a feed ends, besides the log's end: the same rules as `ChangeRequest`'s. */
export interface StopRules {
  readonly target?: BinlogPosition | undefined
  readonly maxEvents?: number | undefined
  readonly deadline?: number | undefined
  readonly signal?: AbortSignal | undefined
}

/** How change rows are written: the table's columns' plans and the batch schema (change columns, then those). */
export interface Planned {
  readonly plans: ReadonlyArray<ColumnPlan>
  readonly schema: BatchSchema
}

export interface ReaderOptions {
  readonly address: MysqlTarget
  readonly serverId: number
  readonly table: { readonly schema: string; readonly name: string }
  /** Absent: the table's shape at `from` is not known; the reader waits at its first table map (`shape`, `usePlan`). */
  readonly planned?: Planned | undefined
  readonly from: BinlogPosition
  readonly rules: StopRules
  readonly batchRows: number
  readonly batchBytes: number
  readonly zeroDatesAsNull: boolean
  readonly context: ErrorContext
}

/** Batches waiting to be taken before the binary log connection is paused. */
const READY_LIMIT = 4

const IDLE_CHECK_MS = 100

interface BinlogEvent {
  readonly getEventName: () => string
  readonly nextPosition: number
  readonly timestamp: number
  readonly [key: string]: unknown
}

/** Statements the log writes inside a transaction, which do not end it. */
const IN_TRANSACTION = /^\s*(SAVEPOINT|RELEASE\s+SAVEPOINT|ROLLBACK\s+TO|INSERT|UPDATE|DELETE|REPLACE|XA\s)/i

const DDL = /^\s*(?:\/\*.*?\*\/\s*)*(ALTER|DROP|RENAME|TRUNCATE|CREATE\s+OR\s+REPLACE)\s+TABLE\b/is

/** Whether a statement of the log changes `table` (its name quoted or not, with or without its schema). */
const touches = (query: string, table: { readonly schema: string; readonly name: string }): boolean => {
  if (!DDL.test(query)) return false
  const escaped = table.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
  return new RegExp(`(^|[\\s.,\`(])\`?${escaped}\`?([\\s,;(]|$)`, "i").test(query)
}

/**
 * Reads a table's changes from the binary log as a replica does (the `@vlasky/zongji` library, one connection),
 * from a position to where the stop rules end it — always at a transaction boundary — decoding each row image
 * into the batch read's column decoders behind the change columns. `__pos` is the position where the change's
 * transaction begins (with its GTID), `__txid` the GTID's sequence number, `__commit_ts` the time the log gives the
 * transaction. The connection is paused while batches wait to be taken.
 */
export class BinlogReader {
  private readonly zongji: ZongJi
  private readonly ready: Array<Batch> = []
  private planned: Planned | undefined
  private decoders: ReadonlyArray<ColumnDecoder> = []
  private readonly changes: ChangeColumnsBuilder
  private shapeFound: ((names: ReadonlyArray<string> | undefined) => void) | undefined
  /**
   * Without a plan: the table's column names at its first table map in the log (the reader waits there for
   * `usePlan`), or undefined when the feed ends before one.
   */
  readonly shape: Promise<ReadonlyArray<string> | undefined>
  private file: string
  /** The last transaction boundary: every change before it has been read. */
  private boundary: BinlogPosition
  private inGroup = false
  private standaloneGroup = false
  private groupPosition = new Uint8Array(0)
  private groupSeq = 0
  private groupTxid = -1
  private groupMicros = 0
  private rows = 0
  private changeCount = 0
  private movedOn = false
  private end: FeedEnd | undefined
  private failure: SourceError | undefined
  private closing = false
  private paused = false
  private wake: (() => void) | undefined
  private readonly timer: NodeJS.Timeout

  constructor(private readonly options: ReaderOptions) {
    this.file = options.from.file
    this.boundary = options.from
    this.changes = new ChangeColumnsBuilder(Math.min(options.batchRows, 4096), 40)
    this.shape = new Promise((resolve) => (this.shapeFound = resolve))
    if (options.planned !== undefined) this.usePlan(options.planned)
    this.zongji = new ZongJi({
      ...connectionOptions(options.address),
      // Exact values: dates and times as UTC text, JSON as text, big integers and decimals as text.
      dateStrings: true,
      timezone: "Z",
      jsonStrings: true,
      supportBigNumbers: true,
      bigNumberStrings: true
    } as ConstructorParameters<typeof ZongJi>[0])
    this.zongji.on("binlog", (event: unknown) => this.onEvent(event as BinlogEvent))
    this.zongji.on("error", (error: unknown) => this.fail(this.failureOf(error)))
    this.timer = setInterval(() => this.checkIdle(), IDLE_CHECK_MS)
    this.zongji.start({
      serverId: options.serverId,
      filename: options.from.file,
      position: options.from.offset,
      includeSchema: { [options.table.schema]: [options.table.name] }
    })
  }

  /** Sets how rows are written (and goes on reading when the reader waited for it). */
  usePlan(planned: Planned): void {
    this.planned = planned
    this.decoders = planned.plans.map((plan) => columnDecoder(plan, Math.min(this.options.batchRows, 4096)))
    this.shapeFound = undefined
    if (this.waitingForPlan) {
      this.waitingForPlan = false
      this.zongji.connection?.resume()
    }
  }

  private waitingForPlan = false

  private failureOf(error: unknown): SourceError {
    const errno = (error as { errno?: unknown }).errno
    if (errno === 1236) {
      return sourceError(this.options.context, `the server cannot send the binary log from ${positionText(this.boundary)}: ${String((error as Error).message)}`, {
        hint: `the binary log was purged past the published position, or belongs to another server: rivet state reset -e ${this.options.context.exportName ?? "<export>"} starts the export again from a new snapshot`
      })
    }
    if (errno === undefined && error instanceof Error && !("code" in error)) {
      return connectionClosed(this.options.context, "reading the binary log", error.message)
    }
    return fromMysql(error, this.options.context, "reading the binary log")
  }

  private onEvent(event: BinlogEvent): void {
    if (this.end !== undefined || this.failure !== undefined) return
    try {
      this.handle(event)
    } catch (cause) {
      this.fail(cause instanceof Error && "_tag" in cause ? (cause as SourceError) : fromMysql(cause, this.options.context, "decoding the binary log"))
    }
  }

  private handle(event: BinlogEvent): void {
    const name = event.getEventName()
    switch (name) {
      case "rotate": {
        this.file = String(event["binlogName"])
        if (!this.inGroup) this.reachBoundary({ file: this.file, offset: Number(event["position"]) }, false)
        return
      }
      case "gtid":
      case "anonymousgtid":
      case "mariadbgtid":
        this.beginGroup(event, event["standalone"] === true)
        this.groupTxid = Number(name === "mariadbgtid" ? event["seqNo"] : event["gno"])
        return
      case "query": {
        const query = String(event["query"])
        if (/^\s*BEGIN\s*$/i.test(query)) {
          if (!this.inGroup) this.beginGroup(event, false)
          return
        }
        if (!/^\s*(COMMIT|ROLLBACK)\s*$/i.test(query) && touches(query, this.options.table)) {
          if (this.endBeforeSchemaChange(`the table's definition changed in the binary log (${query.trim().split(/\s+/).slice(0, 3).join(" ")} …)`)) return
        }
        // A statement outside BEGIN … COMMIT, DDL, COMMIT or ROLLBACK ends the group; a statement of a transaction
        // (a savepoint, a statement-based row change) does not.
        if (!this.inGroup || this.standaloneGroup || !IN_TRANSACTION.test(query)) this.endGroup(event)
        return
      }
      case "xid":
        this.endGroup(event)
        return
      case "tablemap":
        this.checkTableMap(event)
        return
      case "writerows":
      case "updaterows":
      case "deleterows":
        this.appendRows(name, event)
        return
      default:
        if (!this.inGroup && event.nextPosition > 0) this.reachBoundary({ file: this.file, offset: event.nextPosition }, false)
    }
  }

  private beginGroup(event: BinlogEvent, standalone: boolean): void {
    this.inGroup = true
    this.standaloneGroup = standalone
    this.groupSeq = 0
    this.groupTxid = -1
    this.groupMicros = event.timestamp * 1000
    const gtid = typeof event["gtid"] === "string" ? event["gtid"] : undefined
    this.groupPosition = Buffer.from(positionText({ ...this.boundary, gtid }), "latin1")
  }

  private endGroup(event: BinlogEvent): void {
    this.inGroup = false
    this.standaloneGroup = false
    this.reachBoundary({ file: this.file, offset: event.nextPosition }, true)
  }

  /** The table's columns in the log differ from the plan's: the feed ends before them, or fails when nothing was read. */
  private checkTableMap(event: BinlogEvent): void {
    const { table } = this.options
    if (event["schemaName"] !== table.schema || event["tableName"] !== table.name) return
    const names = event["columnNames"]
    const known = Array.isArray(names) ? (names as ReadonlyArray<string>) : undefined
    if (this.planned === undefined) {
      this.waitingForPlan = true
      this.zongji.connection?.pause()
      this.shapeFound?.(known)
      return
    }
    if (known === undefined) return // no column names in the log (binlog_row_metadata is not FULL): the DDL statement tells
    const planned = this.planned.plans.map((plan) => plan.name)
    if (known.length === planned.length && known.every((name, i) => name === planned[i])) return
    const detail = `the table's columns in the binary log (${known.join(", ")}) differ from its columns now (${planned.join(", ")})`
    if (this.endBeforeSchemaChange(detail)) return
    throw sourceError(this.options.context, `${detail} at ${positionText(this.boundary)}: its definition changed more than once since the published position`, {
      hint: `rivet state reset -e ${this.options.context.exportName ?? "<export>"} starts the export again from a new snapshot`
    })
  }

  /** Ends the feed at the last boundary for a change of the table's definition; false when nothing was read yet. */
  private endBeforeSchemaChange(detail: string): boolean {
    if (!this.movedOn) return false
    this.finish({ _tag: "SchemaChanged", detail })
    return true
  }

  private appendRows(name: string, event: BinlogEvent): void {
    const entry = (event["tableMap"] as Record<number, { parentSchema: string; tableName: string }>)[Number(event["tableId"])]
    if (entry === undefined || entry.parentSchema !== this.options.table.schema || entry.tableName !== this.options.table.name) return
    const rows = event["rows"] as ReadonlyArray<Record<string, unknown>>
    const op: ChangeOp = name === "writerows" ? "insert" : name === "updaterows" ? "update" : "delete"
    for (const row of rows) {
      this.appendRow(op, op === "update" ? (row["after"] as Record<string, unknown>) : row)
    }
  }

  private appendRow(op: ChangeOp, row: Record<string, unknown>): void {
    const { zeroDatesAsNull, context } = this.options
    const plans = this.planned!.plans
    for (let c = 0; c < plans.length; c++) {
      const plan = plans[c]!
      try {
        appendValue(this.decoders[c]!, plan, row[plan.name])
      } catch (cause) {
        if (cause instanceof ZeroDate && zeroDatesAsNull) {
          this.decoders[c]!.appendNull()
          continue
        }
        const reason = cause instanceof ZeroDate ? `the zero date '${cause.message}'` : cause instanceof BadValue || cause instanceof Error ? cause.message : String(cause)
        const where = `the ${op} at ${Buffer.from(this.groupPosition).toString("latin1")}`
        throw sourceError(context, `column "${plan.name}" (${plan.sourceType}) in ${where}: ${reason}`, {
          quoted: `${where}: ${reason}`,
          hint: cause instanceof ZeroDate ? "set zero_dates: null in the source block to export zero dates as NULL" : undefined
        })
      }
    }
    this.changes.appendChange(op, this.groupPosition, this.groupSeq++, this.groupMicros, this.groupTxid)
    this.rows++
    this.changeCount++
    if (this.rows >= this.options.batchRows || ((this.rows & 255) === 0 && this.bytes() >= this.options.batchBytes)) this.flush()
  }

  private bytes(): number {
    let total = 0
    for (const decoder of this.decoders) total += decoder.byteLength()
    return total
  }

  private reachBoundary(position: BinlogPosition, transaction: boolean): void {
    if (position.offset <= 0) return
    this.boundary = position
    if (transaction) this.movedOn = true
    const { target, maxEvents, deadline, signal } = this.options.rules
    if (target !== undefined && comparePositions(position, target) >= 0) this.finish({ _tag: "Current" })
    else if (maxEvents !== undefined && this.changeCount >= maxEvents) this.finish({ _tag: "MaxEvents" })
    else if (signal?.aborted === true) this.finish({ _tag: "Stopped" })
    else if (deadline !== undefined && Date.now() >= deadline) this.finish({ _tag: "Window" })
  }

  /** Between transactions, a stop request or the window's end need no further event. */
  private checkIdle(): void {
    if (this.inGroup || this.end !== undefined || this.failure !== undefined) return
    const { deadline, signal } = this.options.rules
    if (signal?.aborted === true) this.finish({ _tag: "Stopped" })
    else if (deadline !== undefined && Date.now() >= deadline) this.finish({ _tag: "Window" })
  }

  private flush(): void {
    if (this.rows === 0) return
    const columns: Array<ColumnData> = []
    this.changes.finishInto(columns)
    for (const decoder of this.decoders) columns.push(decoder.finish())
    this.changes.reset()
    this.ready.push(batchFromColumns(this.planned!.schema, columns))
    this.rows = 0
    if (this.ready.length >= READY_LIMIT && !this.paused) {
      this.paused = true
      this.zongji.connection?.pause()
    }
    this.signal()
  }

  private finish(end: FeedEnd): void {
    this.flush()
    this.end = end
    this.shapeFound?.(undefined)
    this.stop()
    this.signal()
  }

  private fail(error: SourceError): void {
    if (this.failure !== undefined || this.end !== undefined || this.closing) return
    this.failure = error
    this.shapeFound?.(undefined)
    this.stop()
    this.signal()
  }

  private signal(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  private stop(): void {
    clearInterval(this.timer)
    if (this.closing) return
    this.closing = true
    this.zongji.stop()
  }

  /** The next batch, or undefined once the feed ended; rejects with the read's failure. */
  async next(): Promise<Batch | undefined> {
    for (;;) {
      const batch = this.ready.shift()
      if (batch !== undefined) {
        if (this.paused && this.ready.length === 0) {
          this.paused = false
          this.zongji.connection?.resume()
        }
        return batch
      }
      if (this.failure !== undefined) throw this.failure
      if (this.end !== undefined) return undefined
      await new Promise<void>((resolve) => (this.wake = resolve))
    }
  }

  /** Where the feed ended and why, once `next` gave undefined. */
  reached(): { readonly position: BinlogPosition; readonly end: FeedEnd } | undefined {
    return this.end === undefined ? undefined : { position: this.boundary, end: this.end }
  }

  close(): void {
    this.stop()
  }
}
