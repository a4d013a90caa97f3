/**
 * Checks, on a live server, what Rivet's CDC needs of postgres.js + bench/cdc/pgoutput.ts (not part of `npm test`):
 *
 *   npx esbuild bench/cdc/capabilities.ts --bundle --platform=node --format=esm --packages=external \
 *     --outfile=bench/.work/cdc-capabilities.mjs
 *   CDC_BENCH_URL=postgres://postgres@127.0.0.1:5499/postgres node bench/.work/cdc-capabilities.mjs
 *
 * CDC_BENCH_URL: a PostgreSQL >= 15 with wal_level=logical where the table cdc_cap, the publication cdc_cap_pub and
 * the slot cdc_cap may be created and dropped. Prints one line per check and exits non-zero if one fails:
 *  1. a permanent named slot created with an exported snapshot on a replication connection, the snapshot imported
 *     by a normal connection (SET TRANSACTION SNAPSHOT) and read there, rows written after it only in the stream;
 *  2. START_REPLICATION at a chosen LSN with binary 'true'; nothing confirmed until we say so (confirmed_flush_lsn
 *     unchanged after the stream was read), then exactly what we confirm;
 *  3. unchanged TOAST values: marked (not NULL) under REPLICA IDENTITY DEFAULT, filled from the old tuple under FULL;
 *  4. a Relation message mid-stream (ALTER TABLE … ADD COLUMN) gives the new shape;
 *  5. backpressure: the CopyBoth stream paused while 200 000 changes are pending holds only a few socket reads;
 *  6. a new connection started at the confirmed LSN sees only the later transactions.
 */
import type { Duplex } from "node:stream"
import postgres from "postgres"
import type { FieldSink } from "../../src/plugins/sources/postgres/binary-wire.js"
import { formatLsn, lsnAt, parseLsn, PgoutputDecoder, type ChangeBatch } from "./pgoutput.js"

const url = process.env["CDC_BENCH_URL"] ?? "postgres://postgres@127.0.0.1:5499/postgres"
let failed = false
const check = (name: string, ok: boolean, detail: string): void => {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}: ${detail}`)
  if (!ok) failed = true
}

const sql = postgres(url, { max: 3, onnotice: () => {}, fetch_types: false })
const replication = () =>
  postgres(url, { max: 1, fetch_types: false, prepare: false, idle_timeout: 0, onnotice: () => {}, connection: { replication: "database" } as never })

await sql.unsafe(`select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = 'cdc_cap'`)
await sql.unsafe(`drop publication if exists cdc_cap_pub; drop table if exists cdc_cap;
  create table cdc_cap (id int8 primary key, n int4, big text);
  insert into cdc_cap select g, g, null from generate_series(1, 1000) g;
  create publication cdc_cap_pub for table cdc_cap;`)

// 1. Slot with an exported snapshot, read on another connection.
const repl = replication()
const [created] = await repl.unsafe(`CREATE_REPLICATION_SLOT cdc_cap LOGICAL pgoutput (SNAPSHOT 'export')`)
const consistent = String(created!["consistent_point"])
const snapshot = String(created!["snapshot_name"])
// Written after the slot: in the stream, not in the snapshot.
await sql.unsafe(`insert into cdc_cap values (1001, 1001, null)`)
const snapshotCount = await sql.begin("isolation level repeatable read", async (tx) => {
  await tx.unsafe(`set transaction snapshot '${snapshot}'`)
  const [row] = await tx.unsafe(`select count(*)::int as n from cdc_cap`)
  return row!["n"] as number
})
check("exported snapshot", snapshotCount === 1000, `slot at ${consistent}, snapshot ${snapshot} imported, ${snapshotCount} rows (1000 before the slot)`)

// More changes: TOAST (default identity, then FULL), a schema change.
const big = (await sql.unsafe(`select string_agg(md5(g::text), '') as s from generate_series(1, 400) g`))[0]!["s"] as string
await sql.unsafe(`update cdc_cap set big = '${big}' where id = 1`)
await sql.unsafe(`update cdc_cap set n = -1 where id = 1`) // big unchanged: 'u' under DEFAULT
await sql.unsafe(`alter table cdc_cap replica identity full`)
await sql.unsafe(`update cdc_cap set n = -2 where id = 1`) // big unchanged: 'u', the old tuple has it
await sql.unsafe(`alter table cdc_cap add column extra int4`)
await sql.unsafe(`insert into cdc_cap values (1002, 1002, null, 42)`)
const [{ lsn: targetText }] = (await sql.unsafe(`select pg_current_wal_lsn()::text as lsn`)) as unknown as [{ lsn: string }]
const target = parseLsn(targetText)

// 2. START_REPLICATION at the consistent point with binary values; collect rows.
interface Seen {
  op: string
  relationColumns: number
  values: Array<Uint8Array | null>
  unchanged: number
}
const collect = (): FieldSink => {
  let values: Array<Uint8Array | null> = []
  return {
    get length() {
      return values.length
    },
    value: (b, at, size) => void values.push(Uint8Array.prototype.slice.call(b, at, at + size)),
    nul: () => void values.push(null),
    finish: () => {
      const out = values
      values = []
      return out as never
    },
    reset: () => {}
  }
}
const streamUntil = async (
  connection: ReturnType<typeof replication>,
  start: string,
  until: number,
  onCommit?: (endLsn: number) => void
): Promise<{ rows: Array<Seen>; lastEnd: number; stream: Duplex }> => {
  const rows: Array<Seen> = []
  let lastEnd = 0
  const decoder = new PgoutputDecoder(
    {
      sinks: (relation) => relation.columns.map(collect),
      batch: (batch: ChangeBatch) => {
        const columns = batch.columns as unknown as Array<Array<Uint8Array | null>>
        for (let r = 0; r < batch.rows; r++) {
          rows.push({
            op: String.fromCharCode(batch.meta.op[r]!),
            relationColumns: batch.relation.columns.length,
            values: columns.map((column) => column[r]!),
            unchanged: batch.meta.unchanged[r]!
          })
        }
      },
      commit: (_commit, end) => {
        lastEnd = end
        onCommit?.(end)
      }
    },
    1
  )
  const stream = await connection
    .unsafe(`START_REPLICATION SLOT cdc_cap LOGICAL ${start} (proto_version '1', publication_names 'cdc_cap_pub', binary 'true')`)
    .writable() as unknown as Duplex
  await new Promise<void>((resolve, reject) => {
    stream.on("error", reject)
    const onData = (x: Buffer): void => {
      if (x[0] === 0x77) decoder.message(x, 25, x.length)
      if ((x[0] === 0x77 && x[25] === 0x43 && lsnAt(x, 35) >= until) || (x[0] === 0x6b && lsnAt(x, 1) >= until && !decoder.inTransaction)) {
        stream.off("data", onData)
        resolve()
      }
    }
    stream.on("data", onData)
  })
  return { rows, lastEnd, stream }
}

const status = (flushed: number): Buffer => {
  const x = Buffer.alloc(34)
  x[0] = 0x72
  for (const at of [1, 9, 17]) {
    x.writeUInt32BE(Math.floor(flushed / 2 ** 32), at)
    x.writeUInt32BE(flushed % 2 ** 32, at + 4)
  }
  x.writeBigInt64BE(BigInt(Date.now() - Date.UTC(2000, 0, 1)) * 1000n, 25)
  return x
}
const confirmedFlush = async (): Promise<string> =>
  (await sql.unsafe(`select confirmed_flush_lsn::text as l from pg_replication_slots where slot_name = 'cdc_cap'`))[0]!["l"] as string

const first = await streamUntil(repl, consistent, target)
const ops = first.rows.map((r) => r.op).join("")
check("stream from the consistent point", ops === "IUUUI", `ops ${ops} (insert after the slot, 3 updates, insert after ALTER)`)
await new Promise((r) => setTimeout(r, 300))
const before = await confirmedFlush()
check("no confirmation before ours", before === consistent, `confirmed_flush_lsn ${before} after reading up to ${targetText}`)

// 3. Unchanged TOAST.
const [, toasted, defaultIdentity, fullIdentity, afterAlter] = first.rows
check("TOAST value written", toasted?.values[2]?.length === big.length, `${toasted?.values[2]?.length} bytes`)
check(
  "unchanged TOAST, REPLICA IDENTITY DEFAULT",
  defaultIdentity?.values[2] === null && defaultIdentity.unchanged === 1 << 2,
  `value ${defaultIdentity?.values[2] === null ? "absent" : "present"}, unchanged mask ${defaultIdentity?.unchanged}`
)
check(
  "unchanged TOAST, REPLICA IDENTITY FULL",
  fullIdentity?.values[2]?.length === big.length && fullIdentity.unchanged === 0,
  `${fullIdentity?.values[2]?.length} bytes from the old tuple, mask ${fullIdentity?.unchanged}`
)
// 4. Relation mid-stream.
const extra = afterAlter?.values[3] ? Buffer.from(afterAlter.values[3]).readInt32BE(0) : null
check("Relation mid-stream", afterAlter?.relationColumns === 4 && extra === 42, `${afterAlter?.relationColumns} columns, extra = ${extra}`)

// Confirm the last commit's end LSN (as after publishing its manifest).
first.stream.write(status(first.lastEnd))
await new Promise((r) => setTimeout(r, 500))
const after = await confirmedFlush()
check("confirm what we choose", parseLsn(after) === first.lastEnd, `sent ${formatLsn(first.lastEnd)}, slot says ${after}`)
await new Promise<void>((r) => (first.stream.once("close", () => r()), first.stream.end()))
await repl.end({ timeout: 1 })

// 5. Backpressure: pause the stream while a 200 000-row transaction is pending.
await sql.unsafe(`insert into cdc_cap (id, n) select g, g from generate_series(10000, 209999) g`)
const [{ lsn: target2Text }] = (await sql.unsafe(`select pg_current_wal_lsn()::text as lsn`)) as unknown as [{ lsn: string }]
const repl2 = replication()
const stream2 = await repl2
  .unsafe(`START_REPLICATION SLOT cdc_cap LOGICAL ${after} (proto_version '1', publication_names 'cdc_cap_pub', binary 'true')`)
  .writable() as unknown as Duplex
let received = 0
let bytes = 0
let lastCommitEnd = 0
const onData = (x: Buffer): void => {
  received++
  bytes += x.length
  if (x[0] === 0x77 && x[25] === 0x43) lastCommitEnd = lsnAt(x, 35)
}
// Paused from inside the 50 000th message's handler, mid-transaction, as a full downstream queue would.
let pausedAt = 0
const pausing = (x: Buffer): void => {
  if (received === 50_000) {
    stream2.pause()
    pausedAt = received
  }
  void x
}
stream2.on("data", onData)
stream2.on("data", pausing)
await new Promise<void>((resolve) => {
  const timer = setInterval(() => pausedAt > 0 && (clearInterval(timer), resolve()), 20)
})
await new Promise((r) => setTimeout(r, 2000))
check(
  "backpressure",
  received === pausedAt && stream2.readableLength <= 1 << 20,
  `paused at message ${pausedAt} (${(bytes / 2 ** 20).toFixed(1)} MiB read); 2 s later: ${received - pausedAt} more delivered, ${stream2.readableLength} bytes buffered in the stream (the rest waits in the socket and the server)`
)
stream2.resume()
const target2 = parseLsn(target2Text)
await new Promise<void>((resolve) => {
  const timer = setInterval(() => {
    if (lastCommitEnd >= target2 || received >= 200_003) {
      clearInterval(timer)
      resolve()
    }
  }, 50)
})
check("resumed to the end", received >= 200_002, `${received} messages after resume (200 000 inserts + begin/commit + relation)`)
stream2.off("data", onData)
await new Promise<void>((r) => (stream2.once("close", () => r()), stream2.end()))
await repl2.end({ timeout: 1 })

// 6. Start at the confirmed LSN: only the later transaction (the 200 000 rows) comes again, and not what was confirmed.
const repl3 = replication()
let firstOp = ""
let count = 0
const third = await (async () => {
  const stream = await repl3
    .unsafe(`START_REPLICATION SLOT cdc_cap LOGICAL ${after} (proto_version '1', publication_names 'cdc_cap_pub', binary 'true')`)
    .writable() as unknown as Duplex
  await new Promise<void>((resolve) => {
    stream.on("data", (x: Buffer) => {
      if (x[0] === 0x77 && (x[25] === 0x49 || x[25] === 0x55)) {
        if (count++ === 0) firstOp = `${String.fromCharCode(x[25]!)} id ${x.readBigInt64BE(25 + 1 + 4 + 1 + 2 + 1 + 4)}`
      }
      if (x[0] === 0x77 && x[25] === 0x43 && lsnAt(x, 35) >= target2) resolve()
    })
  })
  return stream
})()
check("restart at the confirmed LSN", count === 200_000 && firstOp === "I id 10000", `${count} changes, the first ${firstOp}`)
await new Promise<void>((r) => (third.once("close", () => r()), third.end()))
await repl3.end({ timeout: 1 })

await sql.unsafe(`select pg_drop_replication_slot('cdc_cap')`)
await sql.unsafe(`drop publication cdc_cap_pub; drop table cdc_cap`)
await sql.end()
process.exit(failed ? 1 : 0)
