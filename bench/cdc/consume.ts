/**
 * One consumer of a pgoutput logical replication slot, for the CDC candidates benchmark (bench/cdc/run.sh runs it;
 * it is never part of `npm test`). It streams the slot from its start until the server has sent everything up to
 * TARGET_LSN, decodes every change into a sink, and prints one JSON line: changes, seconds, changes/s, peak RSS.
 *
 *   npx esbuild bench/cdc/consume.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=bench/.work/cdc-consume.mjs
 *   CDC_BENCH_URL=postgres://postgres@127.0.0.1:5499/postgres CDC_LAB=/tmp/cdc-lab \
 *     node bench/.work/cdc-consume.mjs CANDIDATE SLOT TARGET_LSN [PUBLICATION=cdc_bench_pub]
 *
 * CANDIDATE:
 *   postgres-js   postgres.js 3.4 replication connection (`connection: { replication: 'database' }`), its CopyBoth
 *                 Duplex from `sql.unsafe('START_REPLICATION …').writable()`, and bench/cdc/pgoutput.ts
 *   pg-protocol   a bare net.Socket framed by pg-protocol's parser/serializer (trust/password auth only), and
 *                 bench/cdc/pgoutput.ts
 *   pglr          npm pg-logical-replication 2.5 (on pg 8) with its pgoutput parser (a plugin subclass adds
 *                 `binary 'true'`); auto-ack and the ack timer off
 *   pgwire        npm pgwire 0.8 (`logicalReplication` + `pgoutputDecode`)
 * CDC_SINK=columns (default): every value goes through Rivet's binary field readers into column builders (batches of
 *   10 000 rows, dropped once cut); CDC_SINK=touch: every value's bytes are only touched (length + first byte).
 * CDC_BINARY=true (default) | false: pgoutput's `binary` option (with false, text values: `touch` only).
 * CDC_LAB: a scratch directory where `npm install pg-logical-replication@2.5.0 pgwire@0.8.1 pg pg-protocol` was run
 *   (those are not Rivet dependencies). postgres.js is Rivet's own.
 * The slot is never confirmed past its start: the benchmark can be re-run on a copy of the same slot.
 */
import { closeSync, openSync, writeSync } from "node:fs"
import { createRequire } from "node:module"
import net from "node:net"
import type * as PgProtocol from "pg-protocol"
import postgres from "postgres"
import type { FieldSink } from "../../src/plugins/sources/postgres/binary-wire.js"
import { fieldReader } from "../../src/plugins/sources/postgres/binary-fields.js"
import { planColumn, type PgType, resolveShape } from "../../src/plugins/sources/postgres/types.js"
import { formatLsn, lsnAt, parseLsn, PgoutputDecoder, type Relation } from "./pgoutput.js"

const [candidate, slot, targetText, publicationArg] = process.argv.slice(2)
if (candidate === undefined || slot === undefined || targetText === undefined) {
  throw new Error("usage: cdc-consume.mjs CANDIDATE SLOT TARGET_LSN [PUBLICATION]")
}
const publication = publicationArg ?? "cdc_bench_pub"
const url = process.env["CDC_BENCH_URL"] ?? "postgres://postgres@127.0.0.1:5499/postgres"
const lab = process.env["CDC_LAB"] ?? "/tmp/cdc-lab"
const sinkMode = process.env["CDC_SINK"] ?? "columns"
const binary = (process.env["CDC_BINARY"] ?? "true") === "true"
const target = parseLsn(targetText)
// The replication connection's URL (a bench/cdc/replay-server.ts address, to measure the client alone); catalog
// queries always go to CDC_BENCH_URL.
const replicationUrl = process.env["CDC_REPLICATION_URL"] ?? url
// postgres-js only: also write every CopyData message received, framed as on the wire, to this file (for replay).
const recordPath = process.env["CDC_RECORD"]
const START = "0/0" // the slot's confirmed_flush_lsn: the server starts there
const options = `proto_version '1', publication_names '${publication}'${binary ? ", binary 'true'" : ""}`

// ── Measurement ───────────────────────────────────────────────────────────────
let peakRss = process.memoryUsage().rss
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss)
}, 20)
let started = 0
let changes = 0
let touched = 0
let unchanged = 0
let batches = 0
let finished = false

const finish = (extra: Record<string, unknown> = {}): void => {
  if (finished) return
  finished = true
  const seconds = (performance.now() - started) / 1000
  peakRss = Math.max(peakRss, process.memoryUsage().rss)
  clearInterval(sampler)
  console.log(
    JSON.stringify({
      candidate,
      sink: sinkMode,
      binary,
      node: process.version,
      changes,
      seconds: Number(seconds.toFixed(3)),
      changesPerSecond: Math.round(changes / seconds),
      peakRssMB: Number((peakRss / 2 ** 20).toFixed(1)),
      batches,
      unchangedToast: unchanged,
      touched,
      ...extra
    })
  )
  process.exit(0)
}

// ── Sinks ─────────────────────────────────────────────────────────────────────
const types = new Map<number, PgType>()
const loadTypes = async (): Promise<void> => {
  const sql = postgres(url, { max: 1, fetch_types: false, onnotice: () => {} })
  const rows = await sql.unsafe(
    "select oid::int, typname, typtype, typcategory, typelem::int, typlen::int, typbasetype::int, typtypmod from pg_type"
  )
  for (const row of rows) {
    types.set(row["oid"], {
      oid: row["oid"],
      name: row["typname"],
      kind: row["typtype"],
      category: row["typcategory"],
      element: row["typelem"],
      length: row["typlen"],
      baseType: row["typbasetype"],
      typmod: row["typtypmod"]
    })
  }
  await sql.end()
}

const touchSink = (): FieldSink => {
  let length = 0
  return {
    get length() {
      return length
    },
    value(b, at, size) {
      touched += size + (size > 0 ? b[at]! : 0)
      length++
    },
    nul() {
      length++
    },
    finish: () => ({}) as never,
    reset() {
      length = 0
    }
  }
}

/** Rivet's binary reader of each column, as a batch export plans it (types.ts, binary-fields.ts). */
const sinksOf = (columns: ReadonlyArray<{ name: string; type: number; typmod: number }>, capacity: number): Array<FieldSink> =>
  columns.map((column) => {
    if (sinkMode === "touch") return touchSink()
    const planned = planColumn(column.name, resolveShape(types, column.type, column.typmod), undefined)
    if ("problem" in planned) throw new Error(`${column.name}: ${planned.problem.reason}`)
    const reader = fieldReader(planned.plan)
    if (reader.rendered || !binary) throw new Error(`${column.name}: no binary reader (columns sink needs CDC_BINARY=true)`)
    return reader.make(capacity)
  })

const onBatch = (rows: number): void => {
  batches++
  void rows
}

// ── Own decoder over a CopyBoth payload stream ────────────────────────────────
const decoder = new PgoutputDecoder({
  sinks: (relation, capacity) => sinksOf(relation.columns, capacity),
  batch: (batch) => onBatch(batch.rows),
  commit: (_commitLsn, endLsn) => {
    if (endLsn >= target) done()
  }
})

let record: ((payload: Uint8Array) => void) | undefined
let recordEnd = (): void => {}
if (recordPath !== undefined) {
  const fd = openSync(recordPath, "w")
  let buffer = Buffer.alloc(8 << 20)
  let used = 0
  const spill = (): void => {
    writeSync(fd, buffer, 0, used)
    used = 0
  }
  record = (payload) => {
    if (used + payload.length + 5 > buffer.length) spill()
    if (payload.length + 5 > buffer.length) buffer = Buffer.alloc(payload.length + 5)
    buffer[used] = 0x64 // d
    buffer.writeUInt32BE(payload.length + 4, used + 1)
    buffer.set(payload, used + 5)
    used += payload.length + 5
  }
  recordEnd = () => {
    spill()
    closeSync(fd)
  }
}

const done = (): void => {
  recordEnd()
  if (decoder.changes > 0) decoder.flush()
  changes = Math.max(changes, decoder.changes)
  unchanged = Math.max(unchanged, decoder.unchangedToast)
  finish()
}

/** A standby status update: written/flushed/applied = `flushed` (never past the slot's start here). */
const statusUpdate = (flushed: number): Buffer => {
  const x = Buffer.alloc(34)
  x[0] = 0x72 // r
  const hi = Math.floor(flushed / 2 ** 32)
  const lo = flushed % 2 ** 32
  for (const at of [1, 9, 17]) {
    x.writeUInt32BE(hi, at)
    x.writeUInt32BE(lo, at + 4)
  }
  x.writeBigInt64BE(BigInt(Date.now() - Date.UTC(2000, 0, 1)) * 1000n, 25)
  return x
}

/** Handles one replication CopyData payload at `b[start, end)`; answers keepalives with `reply`. */
const replicationMessage = (b: Uint8Array, start: number, end: number, reply: (x: Buffer) => void): void => {
  const tag = b[start]
  if (tag === 0x77) {
    // XLogData: walStart, walEnd, sendTime, then one pgoutput message
    decoder.message(b, start + 25, end)
  } else if (tag === 0x6b) {
    // Primary keepalive: walEnd, sendTime, replyRequested
    const walEnd = lsnAt(b, start + 1)
    if (b[start + 17] === 1) reply(statusUpdate(0))
    if (walEnd >= target && !decoder.inTransaction) done()
  }
}

const viaPostgresJs = async (): Promise<void> => {
  const sql = postgres(replicationUrl, {
    max: 1,
    fetch_types: false,
    prepare: false,
    idle_timeout: 0,
    onnotice: () => {},
    connection: { replication: "database" } as never
  })
  started = performance.now()
  const stream = await sql.unsafe(`START_REPLICATION SLOT "${slot}" LOGICAL ${START} (${options})`).writable()
  const reply = (x: Buffer): void => void stream.write(x)
  const timer = setInterval(() => reply(statusUpdate(0)), 10_000)
  timer.unref()
  const raw = process.env["CDC_RAW"] === "1"
  stream.on("data", (payload: Buffer) => {
    record?.(payload)
    if (!raw || payload[0] === 0x6b) replicationMessage(payload, 0, payload.length, reply)
    else {
      // Transport only: CopyData messages counted, nothing decoded but the end (a Commit past the target).
      changes++
      if (payload[25] === 0x43 && lsnAt(payload, 35) >= target) finish({ messages: true })
    }
  })
  stream.on("error", (error: unknown) => {
    console.error(error)
    process.exit(1)
  })
}

const viaPgProtocol = async (): Promise<void> => {
  const require = createRequire(`${lab}/package.json`)
  const { parse, serialize } = require("pg-protocol") as typeof PgProtocol
  const address = new URL(replicationUrl)
  const socket = net.connect({ host: address.hostname, port: Number(address.port || 5432) })
  socket.setNoDelay(true)
  await new Promise((resolve) => socket.once("connect", resolve))
  socket.write(
    serialize.startup({
      user: decodeURIComponent(address.username || "postgres"),
      database: address.pathname.slice(1) || "postgres",
      replication: "database"
    })
  )
  let copying = false
  const reply = (x: Buffer): void => void socket.write(serialize.copyData(x))
  void parse(socket, (message) => {
    switch (message.name) {
      case "copyData": {
        const chunk = (message as unknown as { chunk: Buffer }).chunk
        replicationMessage(chunk, 0, chunk.length, reply)
        return
      }
      case "authenticationCleartextPassword":
        socket.write(serialize.password(decodeURIComponent(address.password)))
        return
      case "readyForQuery":
        if (!copying) {
          copying = true
          started = performance.now()
          socket.write(serialize.query(`START_REPLICATION SLOT "${slot}" LOGICAL ${START} (${options})`))
        }
        return
      case "error":
        console.error(message)
        process.exit(1)
    }
  })
}

// ── Libraries with their own pgoutput parsers ─────────────────────────────────
interface LibColumn {
  readonly name: string
  readonly typeOid: number
  readonly typeMod: number
}
const libSinks = new Map<number, { sinks: Array<FieldSink>; rows: number; names: Array<string> }>()
let libInTransaction = false

/** `image`: the key or old tuple of a Delete, whose missing columns are not unchanged TOAST values. */
const libRow = (
  relationOid: number,
  columns: ReadonlyArray<LibColumn>,
  tuple: Record<string, unknown>,
  image = false
): void => {
  let state = libSinks.get(relationOid)
  if (state === undefined) {
    state = {
      sinks: sinksOf(
        columns.map((c) => ({ name: c.name, type: c.typeOid, typmod: c.typeMod })),
        10_000
      ),
      rows: 0,
      names: columns.map((c) => c.name)
    }
    libSinks.set(relationOid, state)
  }
  const { sinks, names } = state
  for (let c = 0; c < names.length; c++) {
    const value = tuple[names[c]!]
    if (value === null) sinks[c]!.nul()
    else if (value === undefined) {
      if (!image) unchanged++
      sinks[c]!.nul()
    } else {
      const bytes = value as Uint8Array
      sinks[c]!.value(bytes, 0, bytes.length)
    }
  }
  changes++
  if (++state.rows === 10_000) {
    for (const sink of sinks) sink.finish()
    for (const sink of sinks) sink.reset()
    state.rows = 0
    onBatch(10_000)
  }
}

const libDone = (): void => {
  for (const state of libSinks.values()) {
    if (state.rows > 0) {
      for (const sink of state.sinks) sink.finish()
      onBatch(state.rows)
    }
  }
  finish()
}

/** The fields of pg-logical-replication's pgoutput messages read here. */
interface PglrMessage {
  readonly tag: string
  readonly commitEndLsn: string
  readonly relation: { readonly relationOid: number; readonly columns: ReadonlyArray<LibColumn> }
  readonly new: Record<string, unknown>
  readonly key: Record<string, unknown> | null
  readonly old: Record<string, unknown> | null
}

/** The part of pg-logical-replication's API used here. */
interface PglrModule {
  readonly PgoutputPlugin: new (options: { protoVersion: number; publicationNames: Array<string> }) => {
    start(client: { query: (sql: string) => Promise<unknown> }, slotName: string, lastLsn: string): Promise<unknown>
  }
  readonly LogicalReplicationService: new (
    client: { connectionString: string },
    config: { acknowledge: { auto: boolean; timeoutSeconds: number } }
  ) => {
    on(event: string, listener: (...args: Array<never>) => void): void
    acknowledge(lsn: string, ping?: boolean): Promise<boolean>
    subscribe(plugin: unknown, slot: string, lsn: string): Promise<unknown>
  }
}

const viaPglr = async (): Promise<void> => {
  const require = createRequire(`${lab}/package.json`)
  const lib = require("pg-logical-replication") as PglrModule
  class BinaryPgoutput extends lib.PgoutputPlugin {
    override start(client: { query: (sql: string) => Promise<unknown> }, slotName: string, lastLsn: string) {
      return client.query(`START_REPLICATION SLOT "${slotName}" LOGICAL ${lastLsn} (${options})`)
    }
  }
  const service = new lib.LogicalReplicationService(
    { connectionString: replicationUrl },
    { acknowledge: { auto: false, timeoutSeconds: 0 } }
  )
  const plugin = new BinaryPgoutput({ protoVersion: 1, publicationNames: [publication] })
  service.on("data", (_lsn: string, message: PglrMessage) => {
    switch (message.tag) {
      case "begin":
        libInTransaction = true
        return
      case "commit":
        libInTransaction = false
        if (parseLsn(message.commitEndLsn) >= target) libDone()
        return
      case "insert":
      case "update":
        libRow(message.relation.relationOid, message.relation.columns, message.new)
        return
      case "delete":
        libRow(message.relation.relationOid, message.relation.columns, message.key ?? message.old!, true)
        return
    }
  })
  service.on("heartbeat", (lsn: string, _time: number, shouldRespond: boolean) => {
    // acknowledge(lsn) confirms lsn + 1; this answers with the slot's start (nothing confirmed).
    if (shouldRespond) void service.acknowledge("0/0")
    if (parseLsn(lsn) >= target && !libInTransaction) libDone()
  })
  service.on("error", (error: unknown) => {
    console.error(error)
    process.exit(1)
  })
  started = performance.now()
  void service.subscribe(plugin, slot, START)
}

const viaPgwire = async (): Promise<void> => {
  const pgwire = await import(`${lab}/node_modules/pgwire/index.js`)
  const connection = pgwire.pgconnection({ replication: "database" }, replicationUrl)
  started = performance.now()
  const replication = connection.logicalReplication({
    slot,
    startLsn: START,
    options: { proto_version: "1", publication_names: publication, ...(binary ? { binary: "true" } : {}) },
    ackInterval: 10_000
  })
  for await (const chunk of replication.pgoutputDecode()) {
    for (const message of chunk.messages) {
      switch (message.tag) {
        case "begin":
          libInTransaction = true
          break
        case "commit":
          libInTransaction = false
          if (parseLsn(message.commitEndLsn) >= target) libDone()
          break
        case "insert":
        case "update":
          libRow(message.relation.relationOid, message.relation.columns, message.afterRaw)
          break
        case "delete":
          libRow(message.relation.relationOid, message.relation.columns, message.beforeRaw, true)
          break
      }
    }
    if (parseLsn(chunk.lastLsn) >= target && !libInTransaction) libDone()
  }
}

await loadTypes()
switch (candidate) {
  case "postgres-js":
    await viaPostgresJs()
    break
  case "pg-protocol":
    await viaPgProtocol()
    break
  case "pglr":
    await viaPglr()
    break
  case "pgwire":
    await viaPgwire()
    break
  default:
    throw new Error(`unknown candidate ${candidate}`)
}
void formatLsn
void (null as unknown as Relation)
