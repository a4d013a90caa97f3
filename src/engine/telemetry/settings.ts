import type { TelemetryConfig } from "../../config/telemetry.js"

/**
 * Whether a run sends traces and metrics over OTLP/HTTP, and how: on when an OTLP endpoint is configured (the
 * standard `OTEL_EXPORTER_OTLP_ENDPOINT`, or its per-signal variants) and `OTEL_SDK_DISABLED` is not `true`; off by
 * default. Everything else the exporters read from the standard variables themselves (headers, protocol paths,
 * `OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`).
 */
export interface TelemetrySettings {
  readonly serviceName: string
  /** The config's collector, when no OTLP endpoint variable names one (the exporters read those themselves). */
  readonly endpoint?: string | undefined
  readonly traces: boolean
  readonly metrics: boolean
  /** How long one export to the collector may take; shutdown flushes traces and metrics within twice this. */
  readonly timeoutMs: number
}

type Env = Readonly<Record<string, string | undefined>>

const set = (env: Env, name: string): boolean => (env[name] ?? "").trim().length > 0

/** The telemetry a run with this environment (and the config's `telemetry:`) emits; undefined when it emits none. */
export const telemetrySettings = (env: Env, config?: TelemetryConfig | undefined): TelemetrySettings | undefined => {
  if ((env["OTEL_SDK_DISABLED"] ?? "").trim().toLowerCase() === "true") return undefined
  const common = set(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
  const endpoint = common ? undefined : config?.endpoint?.replace(/\/+$/, "")
  const traces = (common || endpoint !== undefined || set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")) && env["OTEL_TRACES_EXPORTER"] !== "none"
  const metrics =
    (common || endpoint !== undefined || set(env, "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) && env["OTEL_METRICS_EXPORTER"] !== "none"
  if (!traces && !metrics) return undefined
  const serviceName = env["OTEL_SERVICE_NAME"]?.trim() || config?.serviceName || "rivet"
  return { serviceName, endpoint, traces, metrics, timeoutMs: 800 }
}
