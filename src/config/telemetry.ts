import * as Schema from "effect/Schema"

/** `telemetry:`, decoded: where runs send traces and metrics (the standard OTEL_* variables win over it). */
export interface TelemetryConfig {
  readonly endpoint?: string | undefined
  readonly serviceName?: string | undefined
}

/** The top-level `telemetry:` block as written in the YAML. */
export const TelemetryBlock = Schema.Struct({
  endpoint: Schema.optional(
    Schema.String.pipe(
      Schema.pattern(/^https?:\/\/\S+$/, { message: () => "must be an http:// or https:// URL, e.g. http://localhost:4318" })
    ).annotations({
      description:
        "OTLP/HTTP collector base URL (http://collector:4318): traces go to {endpoint}/v1/traces, metrics to {endpoint}/v1/metrics. OTEL_EXPORTER_OTLP_ENDPOINT, when set, wins."
    })
  ),
  service_name: Schema.optional(
    Schema.String.annotations({ description: "service.name of the run's telemetry (default rivet). OTEL_SERVICE_NAME, when set, wins." })
  )
}).annotations({
  description: "Send each run's trace and metrics to an OpenTelemetry collector (docs/observability.md). Off unless an endpoint is set here or in OTEL_EXPORTER_OTLP_ENDPOINT."
})
