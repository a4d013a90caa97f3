/**
 * Rivet's public API: run exports from code, put your own step between source and format, and write your own
 * sources, formats and sinks. Importing this module never loads a cloud SDK; built-in plugins load on first use.
 * Plugin packages may import the lighter `rivet-export/plugin` (the contract only, re-exported here whole); tests import
 * `rivet-export/testing`.
 */
export { loadConfig, runExports, runExportsEffect, type ConfigInput, type RunExportsOptions } from "./api.js"
export { defineConfig, type ExportInput, type LoadedPlugin, type RivetConfigInput } from "./config-input.js"
export { mapRows, type Row } from "./map-rows.js"
export type { ExportConfig, RivetConfig } from "./config/model.js"
export * from "./plugin.js"
export { exitCodeOf } from "./core/errors.js"
export type { Manifest, PartRecord } from "./core/manifest.js"
export type { ExportResult } from "./engine/pipeline.js"
export {
  ProgressReporter,
  silentProgress,
  type ExportOutcome,
  type ExportProgress,
  type ProgressReporterShape
} from "./core/progress.js"
export type { ExportRun } from "./engine/run.js"
export { telemetryLayer } from "./engine/telemetry/layer.js"
export { parseByteSize } from "./core/size.js"
export {
  postgresStateLayer,
  sqliteStateLayer,
  stateLayerFor,
  StateStore,
  type CursorState,
  type LeaseAcquisition,
  type LeaseHolder,
  type LeaseProof,
  type LeaseRenewal,
  type LeaseRequest,
  type RunRecord,
  type StateStoreShape
} from "./state/index.js"
