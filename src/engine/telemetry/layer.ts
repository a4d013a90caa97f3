import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { TelemetryConfig } from "../../config/telemetry.js"
import { telemetrySettings } from "./settings.js"

/**
 * Traces and metrics over OTLP/HTTP when the environment names a collector (see `telemetrySettings`), nothing
 * otherwise. The OpenTelemetry SDK is imported only then. Telemetry never fails a run: an SDK that cannot load is
 * reported once on stderr and the run goes on without it.
 */
export const telemetryLayer = (
  env: Readonly<Record<string, string | undefined>>,
  options: { readonly version?: string | undefined; readonly metrics?: boolean; readonly config?: TelemetryConfig | undefined } = {}
): Layer.Layer<never> => {
  const found = telemetrySettings(env, options.config)
  const settings = found && { ...found, metrics: found.metrics && options.metrics !== false }
  if (settings === undefined || (!settings.traces && !settings.metrics)) return Layer.empty
  return Layer.unwrapEffect(
    Effect.tryPromise(() => import("./otel.js")).pipe(
      Effect.map(({ otelLayer }) => otelLayer(settings, options.version)),
      Effect.catchAll((error) =>
        Effect.as(
          Console.error(`rivet: telemetry is off: the OpenTelemetry SDK could not load (${String(error.cause)})`),
          Layer.empty
        )
      )
    )
  )
}
