import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Layer from "effect/Layer"
import { redactingTracerLayer } from "./redact.js"
import type { TelemetrySettings } from "./settings.js"

// Loaded only when telemetry is on (layer.ts imports it on demand): a plain run never loads the OpenTelemetry SDK.

/** The config's collector URL for one signal; without it, the exporter reads the OTEL_* variables. */
const signalUrl = (settings: TelemetrySettings, signal: "traces" | "metrics") =>
  settings.endpoint === undefined ? {} : { url: `${settings.endpoint}/v1/${signal}` }

/**
 * Effect's tracer and metrics, exported over OTLP/HTTP (JSON) to the collector the `OTEL_*` variables name. Spans
 * wait in a bounded queue (a full queue drops spans, never blocks) and leave in the background; each request to the
 * collector gives up after `timeoutMs`, and so does each of the two flushes at shutdown, so a collector that is down
 * or hangs costs a run at most twice that. Of a failure, spans tell the collector only what redact.ts lets through.
 */
export const otelLayer = (settings: TelemetrySettings, version: string | undefined): Layer.Layer<never> =>
  Layer.provide(redactingTracerLayer, sdkLayer(settings, version))

const sdkLayer = (settings: TelemetrySettings, version: string | undefined): Layer.Layer<never> =>
  NodeSdk.layer(() => ({
    resource: { serviceName: settings.serviceName, ...(version ? { serviceVersion: version } : {}) },
    spanProcessor: settings.traces
      ? new BatchSpanProcessor(new OTLPTraceExporter({ timeoutMillis: settings.timeoutMs, ...signalUrl(settings, "traces") }), {
          maxQueueSize: 2048,
          maxExportBatchSize: 512,
          exportTimeoutMillis: settings.timeoutMs
        })
      : undefined,
    metricReader: settings.metrics
      ? new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({ timeoutMillis: settings.timeoutMs, ...signalUrl(settings, "metrics") }),
          exportIntervalMillis: 10_000,
          exportTimeoutMillis: settings.timeoutMs
        })
      : undefined,
    shutdownTimeout: settings.timeoutMs
  })) as Layer.Layer<never>
