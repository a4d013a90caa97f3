import { describe, expect, it } from "@effect/vitest"
import { Readable } from "node:stream"
import { AwsChunkedDecoder } from "./chunked.js"

/** Feeds `wire` to a decoder in pieces of `step` bytes; returns the payload and trailers, or the error name. */
const decode = async (wire: string, step: number): Promise<{ payload: string; trailers: Record<string, string> } | string> => {
  const bytes = Buffer.from(wire, "latin1")
  const pieces = Array.from({ length: Math.ceil(bytes.length / step) }, (_, i) => bytes.subarray(i * step, (i + 1) * step))
  const decoder = new AwsChunkedDecoder()
  const out: Array<Buffer> = []
  try {
    for await (const chunk of Readable.from(pieces).pipe(decoder)) out.push(chunk as Buffer)
    return { payload: Buffer.concat(out).toString("latin1"), trailers: Object.fromEntries(decoder.trailers) }
  } catch (error) {
    return (error as Error).name
  }
}

describe("AwsChunkedDecoder", () => {
  const signed = "4;chunk-signature=abc\r\nabcd\r\na;chunk-signature=def\r\n0123456789\r\n0;chunk-signature=ghi\r\n\r\n"
  const trailer = "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n"

  it.each([1, 2, 3, 7, 1000])("decodes signed chunks and trailers whatever the network split (step %i)", async (step) => {
    expect(await decode(signed, step)).toEqual({ payload: "abcd0123456789", trailers: {} })
    expect(await decode(trailer, step)).toEqual({ payload: "hello", trailers: { "x-amz-checksum-crc32": "NhCmhg==" } })
  })

  it("accepts the SDK's checksum-less ending (`0\\r\\n` without the final empty line)", async () => {
    expect(await decode("3\r\nabc\r\n0\r\n", 2)).toEqual({ payload: "abc", trailers: {} })
  })

  it("rejects broken framing", async () => {
    expect(await decode("zz\r\nabc\r\n0\r\n\r\n", 100)).toBe("InvalidChunkSizeError")
    expect(await decode("3\r\nabcd\r\n0\r\n\r\n", 100)).toBe("IncompleteBody")
    expect(await decode("5\r\nabc", 100)).toBe("IncompleteBody")
    expect(await decode("0\r\n\r\nextra", 100)).toBe("IncompleteBody")
  })
})
