import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../../../src/api.js"
import { telemetrySettings } from "../../../src/engine/telemetry/settings.js"

describe("telemetry settings", () => {
  it("is off by default, and when OTEL_SDK_DISABLED is true", () => {
    expect(telemetrySettings({})).toBeUndefined()
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBeUndefined()
  })

  it("follows the standard variables, which win over the config's telemetry:", () => {
    const config = { endpoint: "http://config:4318/", serviceName: "from-config" }
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://env:4318", OTEL_SERVICE_NAME: "from-env" }, config)).toMatchObject({
      serviceName: "from-env",
      endpoint: undefined,
      traces: true,
      metrics: true
    })
    expect(telemetrySettings({}, config)).toMatchObject({ serviceName: "from-config", endpoint: "http://config:4318" })
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://t:4318/v1/traces" })).toMatchObject({
      serviceName: "rivet",
      traces: true,
      metrics: false
    })
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_METRICS_EXPORTER: "none" })).toMatchObject({
      traces: true,
      metrics: false
    })
  })

  it("refuses a telemetry endpoint that is not a URL, naming the config path", async () => {
    const config = {
      telemetry: { endpoint: "collector:4318" },
      source: { type: "postgres", url: "postgres://u@127.0.0.1:5432/db" },
      exports: [{ name: "a", table: "t", destination: { type: "local", path: "out" } }]
    }
    const error = await Effect.runPromise(Effect.flip(loadConfig(config as never, { configDir: "." })))
    expect(error.message).toContain("must be an http:// or https:// URL")
    expect(JSON.stringify(error)).toContain("telemetry.endpoint")
  })
})
