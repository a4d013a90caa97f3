import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"

// A loopback OTLP/HTTP receiver for tests: it takes what an OpenTelemetry exporter posts to /v1/traces and
// /v1/metrics (the JSON encoding) and keeps every raw body, to decode and to search for what must never leave.

/** One attribute as OTLP/JSON encodes it. */
interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string | undefined
  readonly name: string
  readonly attributes: Readonly<Record<string, string | number | boolean>>
  readonly service: string | undefined
  /** OTLP status code: 0 unset, 1 ok, 2 error; and its message. */
  readonly status: { readonly code: number; readonly message: string }
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Readonly<Record<string, string | number | boolean>> }>
}

export interface ReceivedPoint {
  readonly metric: string
  readonly attributes: Readonly<Record<string, string | number | boolean>>
  /** A sum's value, or a histogram's count. */
  readonly value: number
}

export interface OtlpReceiver {
  readonly endpoint: string
  /** Every body received, as text (JSON), by path. */
  readonly bodies: () => ReadonlyArray<{ readonly path: string; readonly body: string }>
  readonly spans: () => ReadonlyArray<ReceivedSpan>
  readonly points: () => ReadonlyArray<ReceivedPoint>
  readonly close: () => Promise<void>
}

const valueOf = (value: AnyValue): string | number | boolean =>
  value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ?? value.boolValue ?? ""

const attributesOf = (list: ReadonlyArray<KeyValue> | undefined) =>
  Object.fromEntries((list ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)]))

interface TracesBody {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: ReadonlyArray<KeyValue> }
    readonly scopeSpans?: ReadonlyArray<{
      readonly spans?: ReadonlyArray<{
        traceId: string
        spanId: string
        parentSpanId?: string
        name: string
        attributes?: ReadonlyArray<KeyValue>
        status?: { code?: number; message?: string }
        events?: ReadonlyArray<{ name: string; attributes?: ReadonlyArray<KeyValue> }>
      }>
    }>
  }>
}

interface DataPoint {
  readonly attributes?: ReadonlyArray<KeyValue>
  readonly asDouble?: number
  readonly asInt?: number | string
  readonly count?: number | string
}
interface MetricsBody {
  readonly resourceMetrics?: ReadonlyArray<{
    readonly scopeMetrics?: ReadonlyArray<{
      readonly metrics?: ReadonlyArray<{
        readonly name: string
        readonly sum?: { readonly dataPoints?: ReadonlyArray<DataPoint> }
        readonly gauge?: { readonly dataPoints?: ReadonlyArray<DataPoint> }
        readonly histogram?: { readonly dataPoints?: ReadonlyArray<DataPoint> }
      }>
    }>
  }>
}

/**
 * Starts a receiver on 127.0.0.1 (a free port). `hang`: it accepts every request and never answers, like a
 * collector that is stuck.
 */
export const startOtlpReceiver = async (options: { readonly hang?: boolean } = {}): Promise<OtlpReceiver> => {
  const bodies: Array<{ path: string; body: string }> = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      bodies.push({ path: req.url ?? "", body: Buffer.concat(chunks).toString("utf8") })
      if (options.hang) return
      res.writeHead(200, { "content-type": "application/json" })
      res.end("{}")
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const parsed = <A>(path: string) =>
    bodies.filter((entry) => entry.path === path).map((entry) => JSON.parse(entry.body) as A)
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies: () => bodies,
    spans: () =>
      parsed<TracesBody>("/v1/traces").flatMap((body) =>
        (body.resourceSpans ?? []).flatMap((resource) => {
          const service = attributesOf(resource.resource?.attributes)["service.name"]
          return (resource.scopeSpans ?? []).flatMap((scope) =>
            (scope.spans ?? []).map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId || undefined,
              name: span.name,
              attributes: attributesOf(span.attributes),
              service: typeof service === "string" ? service : undefined,
              status: { code: span.status?.code ?? 0, message: span.status?.message ?? "" },
              events: (span.events ?? []).map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) }))
            }))
          )
        })
      ),
    points: () =>
      parsed<MetricsBody>("/v1/metrics").flatMap((body) =>
        (body.resourceMetrics ?? []).flatMap((resource) =>
          (resource.scopeMetrics ?? []).flatMap((scope) =>
            (scope.metrics ?? []).flatMap((metric) => {
              const point = (data: DataPoint, value: number | string | undefined) => ({
                metric: metric.name,
                attributes: attributesOf(data.attributes),
                value: Number(value ?? 0)
              })
              return [
                ...[...(metric.sum?.dataPoints ?? []), ...(metric.gauge?.dataPoints ?? [])].map((data) => point(data, data.asDouble ?? data.asInt)),
                ...(metric.histogram?.dataPoints ?? []).map((data) => point(data, data.count))
              ]
            })
          )
        )
      ),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      })
  }
}
