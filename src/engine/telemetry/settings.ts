/**
 * Whether a run sends traces and metrics over OTLP/HTTP, and how: on when an OTLP endpoint is configured (the
 * standard `OTEL_EXPORTER_OTLP_ENDPOINT`, or its per-signal variants) and `OTEL_SDK_DISABLED` is not `true`; off by
 * default. Everything else the exporters read from the standard variables themselves (headers, protocol paths,
 * `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`).
 */
export interface TelemetrySettings {
  readonly serviceName: string
  readonly traces: boolean
  readonly metrics: boolean
  /** How long one export to the collector may take; shutdown flushes traces and metrics within twice this. */
  readonly timeoutMs: number
}

type Env = Readonly<Record<string, string | undefined>>

const set = (env: Env, name: string): boolean => (env[name] ?? "").trim().length > 0

/** The telemetry a run with this environment emits; undefined when it emits none. */
export const telemetrySettings = (env: Env): TelemetrySettings | undefined => {
  if ((env["OTEL_SDK_DISABLED"] ?? "").trim().toLowerCase() === "true") return undefined
  const common = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
  const traces = (common || set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && env["OTEL_TRACES_EXPORTER"] !== "none"
  const metrics = (common || set(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) && env["OTEL_METRICS_EXPORTER"] !== "none"
  if (!traces && !metrics) return undefined
  return { serviceName: env["OTEL_SERVICE_NAME"]?.trim() || "rivet", traces, metrics, timeoutMs: 1000 }
}
