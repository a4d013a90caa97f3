import { readFile } from "node:fs/promises"
import * as avro from "avsc"
import { icebergMetadata, icebergRead } from "icebird"
import { manifestEntrySchema, manifestFileSchema } from "../../src/engine/table-format/iceberg/avro.js"

/** Reads an object for the table reader: a file:// URL from disk, a translated s3:// one from `s3Objects`. */
type ObjectReader = (url: string) => Promise<Uint8Array | undefined>

/**
 * Iceberg locations are raw strings, not percent-encoded URIs (Java's file IO takes them as they are): Rivet's
 * fold-safe partition directories hold `%44%45` for `DE`, which a URL parser would decode.
 */
const fileReader: ObjectReader = (url) =>
  url.startsWith("file://") ? readFile(url.slice("file://".length)).then((bytes) => new Uint8Array(bytes), () => undefined) : Promise.resolve(undefined)

/**
 * icebird reads tables over HTTP `fetch`; a table Rivet wrote to local disk or to the S3 test server is served to it
 * by a `fetch` answering GET, HEAD and byte ranges from `read` — the transport only: icebird parses everything.
 */
const withObjects = async <A>(read: ObjectReader, run: () => Promise<A>): Promise<A> => {
  const original = globalThis.fetch
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url
    const bytes = await read(url)
    if (bytes === undefined) return new Response(null, { status: 404, statusText: "Not Found" })
    if (init?.method === "HEAD") return new Response(null, { status: 200, headers: { "content-length": String(bytes.length) } })
    const range = /bytes=(\d+)-(\d*)/.exec(new Headers(init?.headers).get("range") ?? "")
    if (range === null) return new Response(bytes, { status: 200, headers: { "content-length": String(bytes.length) } })
    const start = Number(range[1])
    const end = range[2] === "" ? bytes.length - 1 : Math.min(Number(range[2]), bytes.length - 1)
    return new Response(bytes.subarray(start, end + 1), {
      status: 206,
      headers: { "content-range": `bytes ${start}-${end}/${bytes.length}`, "content-length": String(end - start + 1) }
    })
  }) as typeof fetch
  try {
    return await run()
  } finally {
    globalThis.fetch = original
  }
}

/** The table metadata a test looks at, as icebird parsed it. */
export interface ReadMetadata {
  readonly "format-version": number
  readonly "current-schema-id": number
  readonly snapshots: ReadonlyArray<{ readonly summary: Readonly<Record<string, string>>; readonly "manifest-list": string; readonly "schema-id"?: number }>
  readonly schemas: ReadonlyArray<{ readonly "schema-id": number; readonly fields: ReadonlyArray<{ readonly id: number; readonly name: string }> }>
  readonly "partition-specs": ReadonlyArray<{ readonly fields: ReadonlyArray<{ readonly name: string; readonly transform: string }> }>
}

/** Every row of the table's current snapshot, as icebird reads it, and the metadata it read. */
export const readIcebergTable = (tableUrl: string, read: ObjectReader = fileReader, metadataFileName?: string) =>
  withObjects(read, async () => {
    const metadata = await icebergMetadata({ tableUrl, ...(metadataFileName === undefined ? {} : { metadataFileName }) })
    const rows = await icebergRead({ tableUrl, metadata })
    return { metadata: metadata as unknown as ReadMetadata, rows }
  })

/** An S3 table's objects for the reader: `https://{bucket}.s3.amazonaws.com/{key}` (icebird's s3:// translation). */
export const s3ObjectReader =
  (getObject: (bucket: string, key: string) => Promise<Uint8Array>): ObjectReader =>
  async (url) => {
    const match = /^https:\/\/([^.]+)\.s3\.amazonaws\.com\/(.+)$/.exec(url)
    if (match === null) return undefined
    return getObject(match[1]!, match[2]!).catch(() => undefined)
  }

/** The records of an Avro file decoded with the writer's schema, and the writer's schema resolved against `expected`. */
export const decodeAvro = (bytes: Uint8Array, expected: object): Promise<{ records: Array<Record<string, unknown>>; metadata: Record<string, string> }> =>
  new Promise((resolve, reject) => {
    const records: Array<Record<string, unknown>> = []
    let metadata: Record<string, string> = {}
    const decoder = new avro.streams.BlockDecoder({ readerSchema: expected } as Partial<avro.DecoderOptions>)
    decoder.on("metadata", (_type: unknown, _codec: unknown, header: { meta: Record<string, Buffer> }) => {
      metadata = Object.fromEntries(Object.entries(header.meta).map(([key, value]) => [key, value.toString("utf8")]))
    })
    decoder.on("data", (record: Record<string, unknown>) => records.push(record))
    decoder.on("error", reject)
    decoder.on("end", () => resolve({ records, metadata }))
    decoder.end(Buffer.from(bytes))
  })

export { manifestEntrySchema, manifestFileSchema }
