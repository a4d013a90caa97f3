/**
 * A stand-in PostgreSQL walsender for the CDC benchmark: it replays a recorded replication stream (the CopyData
 * messages a real server sent, as bench/cdc/consume.ts writes them with CDC_RECORD=file) to each client that sends
 * START_REPLICATION, as fast as the client reads it. With it the clients are measured alone: on this machine the
 * real walsender decodes WAL at ~47k changes/s, far below what the clients can take (bench/cdc/LOG.md).
 *
 *   npx esbuild bench/cdc/replay-server.ts --bundle --platform=node --format=esm --outfile=bench/.work/cdc-replay.mjs
 *   node bench/.work/cdc-replay.mjs RECORDING [PORT=5498]
 *
 * It speaks just enough of the protocol for postgres.js, pg and pgwire: trust authentication (AuthenticationOk,
 * a few ParameterStatus, BackendKeyData, ReadyForQuery), CopyBothResponse for START_REPLICATION, an empty result for
 * any other query, and it ignores the client's CopyData (standby status updates). Loopback only.
 */
import { createReadStream } from "node:fs"
import net from "node:net"

const [recording, portArg] = process.argv.slice(2)
if (recording === undefined) throw new Error("usage: cdc-replay.mjs RECORDING [PORT]")
const port = Number(portArg ?? 5498)

const message = (type: string, body: Buffer): Buffer => {
  const head = Buffer.alloc(5)
  head[0] = type.charCodeAt(0)
  head.writeUInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}
const int32 = (value: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeInt32BE(value)
  return b
}
const cstr = (text: string): Buffer => Buffer.from(`${text}\0`)
const ready = message("Z", Buffer.from("I"))
const greeting = Buffer.concat([
  message("R", int32(0)),
  ...[
    ["server_version", "15.20"],
    ["server_encoding", "UTF8"],
    ["client_encoding", "UTF8"],
    ["DateStyle", "ISO, MDY"],
    ["integer_datetimes", "on"],
    ["standard_conforming_strings", "on"],
    ["TimeZone", "UTC"]
  ].map(([k, v]) => message("S", Buffer.concat([cstr(k!), cstr(v!)]))),
  message("K", Buffer.concat([int32(process.pid), int32(1)])),
  ready
])

const server = net.createServer((socket) => {
  socket.setNoDelay(true)
  let pending = Buffer.alloc(0)
  let started = false
  let streaming = false
  socket.on("error", () => socket.destroy())
  socket.on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk])
    for (;;) {
      if (!started) {
        if (pending.length < 4) return
        const length = pending.readUInt32BE(0)
        if (pending.length < length) return
        const code = pending.readUInt32BE(4)
        pending = pending.subarray(length)
        if (code === 80877103) {
          socket.write("N") // SSLRequest: no
          continue
        }
        started = true
        socket.write(greeting)
        continue
      }
      if (pending.length < 5) return
      const type = String.fromCharCode(pending[0]!)
      const length = pending.readUInt32BE(1)
      if (pending.length < length + 1) return
      const body = pending.subarray(5, length + 1)
      pending = pending.subarray(length + 1)
      if (type === "X") {
        socket.end()
        return
      }
      if (type === "Q") {
        const text = body.toString("utf8", 0, body.length - 1).trim()
        if (/^START_REPLICATION/i.test(text) && !streaming) {
          streaming = true
          socket.write(message("W", Buffer.from([0, 0, 0])))
          createReadStream(recording, { highWaterMark: 256 * 1024 }).pipe(socket, { end: false })
        } else {
          socket.write(Buffer.concat([message("I", Buffer.alloc(0)), ready]))
        }
      }
      // 'd' (standby status updates), 'c', 'S', …: ignored.
    }
  })
})
server.listen(port, "127.0.0.1", () => console.error(`replaying ${recording} on 127.0.0.1:${port}`))
