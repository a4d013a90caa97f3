import * as net from "node:net"
import { testPgUrl } from "../../../support/pg.js"

/** A proxy to the test server that hands the server's bytes to the client in pieces of 1–`most` bytes, one per write. */
export const choppingProxy = async (most: number): Promise<{ url: string; close: () => Promise<void> }> => {
  const target = new URL(testPgUrl())
  let seed = 7
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    client.setNoDelay(true)
    const upstream = net.connect(Number(target.port || 5432), target.hostname)
    sockets.add(client).add(upstream)
    client.pipe(upstream)
    const queue: Array<Buffer> = []
    let writing = false
    const pump = () => {
      const next = queue[0]
      if (next === undefined || client.destroyed) {
        writing = false
        return
      }
      seed = (seed * 1103515245 + 12345) % 2147483648
      const size = 1 + (seed % most)
      client.write(next.subarray(0, size))
      if (size >= next.length) queue.shift()
      else queue[0] = next.subarray(size)
      if (seed % 5 === 0) setTimeout(pump, 0)
      else setImmediate(pump)
    }
    upstream.on("data", (chunk: Buffer) => {
      queue.push(chunk)
      if (!writing) {
        writing = true
        pump()
      }
    })
    const close = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on("close", close).on("error", close)
    upstream.on("close", close).on("error", close)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as net.AddressInfo
  const url = new URL(testPgUrl())
  url.hostname = "127.0.0.1"
  url.port = String(port)
  return {
    url: url.toString(),
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}
