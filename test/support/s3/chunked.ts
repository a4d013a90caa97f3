import { Transform, type TransformCallback } from "node:stream"
import { s3Error } from "./xml.js"

const CRLF = Buffer.from("\r\n")
const MAX_LINE = 8192

type State = { readonly kind: "size" } | { readonly kind: "data"; remaining: number } | { readonly kind: "dataEnd" } | { readonly kind: "trailer" } | { readonly kind: "done" }

/**
 * Decodes the `aws-chunked` content encoding (`<hex-size>[;chunk-signature=…]\r\n<data>\r\n … 0\r\n
 * [trailer:value\r\n]*\r\n`) into the payload bytes; trailers (e.g. `x-amz-checksum-crc32`) are
 * collected in `trailers`. Chunk signatures are skipped, not verified. Framing errors fail the
 * stream with an S3Failure (IncompleteBody / InvalidChunkSizeError).
 */
export class AwsChunkedDecoder extends Transform {
  /** Trailer headers (lower-case names), complete once the stream has ended. */
  readonly trailers = new Map<string, string>()
  private state: State = { kind: "size" }
  private line: Buffer = Buffer.alloc(0)

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      this.consume(chunk)
      callback()
    } catch (error) {
      callback(error as Error)
    }
  }

  override _flush(callback: TransformCallback): void {
    // The SDK ends a checksum-less body right after `0\r\n`, without the final empty line.
    const complete = this.state.kind === "done" || (this.state.kind === "trailer" && this.line.length === 0)
    callback(complete ? null : s3Error("IncompleteBody", "The request body ended in the middle of an aws-chunked frame."))
  }

  private consume(input: Buffer): void {
    let rest = input
    while (rest.length > 0) {
      const state = this.state
      switch (state.kind) {
        case "data": {
          const take = Math.min(state.remaining, rest.length)
          this.push(rest.subarray(0, take))
          state.remaining -= take
          rest = rest.subarray(take)
          if (state.remaining === 0) this.state = { kind: "dataEnd" }
          break
        }
        case "done":
          throw s3Error("IncompleteBody", "Unexpected bytes after the end of an aws-chunked body.")
        default: {
          const [line, after] = this.takeLine(rest)
          rest = after
          if (line !== undefined) this.onLine(line)
        }
      }
    }
  }

  /** Accumulates bytes until CRLF; returns the completed line (if any) and the unconsumed input. */
  private takeLine(input: Buffer): [string | undefined, Buffer] {
    const joined = this.line.length === 0 ? input : Buffer.concat([this.line, input])
    const at = joined.indexOf(CRLF)
    if (at < 0) {
      if (joined.length > MAX_LINE) throw s3Error("InvalidChunkSizeError", "An aws-chunked header line is too long.")
      this.line = Buffer.from(joined)
      return [undefined, Buffer.alloc(0)]
    }
    this.line = Buffer.alloc(0)
    return [joined.subarray(0, at).toString("latin1"), joined.subarray(at + CRLF.length)]
  }

  private onLine(line: string): void {
    switch (this.state.kind) {
      case "size": {
        const sizeText = line.split(";")[0]?.trim() ?? ""
        if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) throw s3Error("InvalidChunkSizeError", `Invalid aws-chunked chunk size "${sizeText}".`)
        const size = parseInt(sizeText, 16)
        this.state = size === 0 ? { kind: "trailer" } : { kind: "data", remaining: size }
        return
      }
      case "dataEnd":
        if (line !== "") throw s3Error("IncompleteBody", "An aws-chunked chunk is longer than its declared size.")
        this.state = { kind: "size" }
        return
      case "trailer": {
        if (line === "") {
          this.state = { kind: "done" }
          return
        }
        const at = line.indexOf(":")
        if (at <= 0) throw s3Error("MalformedTrailerError", `Malformed aws-chunked trailer line "${line}".`)
        this.trailers.set(line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim())
        return
      }
      default:
        return
    }
  }
}
