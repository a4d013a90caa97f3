/**
 * Rivet's public API: run exports from code, put your own step between source and format, and write your own
 * sources, formats and sinks. Importing this module never loads a cloud SDK; built-in plugins load on first use.
 * Plugin packages may import the lighter `rivet/plugin` (the contract only); tests import `rivet/testing`.
 */
export { loadConfig, runExports, runExportsEffect, type ConfigInput, type RunExportsOptions } from "./api.js"
export { mapRows, type Row } from "./map-rows.js"
export {
  batchToRows,
  formatLogicalType,
  makeBatch,
  type Batch,
  type BatchSchema,
  type Column,
  type LogicalType,
  type Value
} from "./runtime/batch.js"
export type { ExportConfig, RivetConfig } from "./runtime/config/model.js"
export {
  ConfigError,
  FormatError,
  IntegrityError,
  PluginError,
  SchemaDriftError,
  SinkError,
  SourceError,
  StateError,
  exitCodeOf,
  type RivetError,
  type SinkErrorReason
} from "./runtime/errors.js"
export { invalidKeyReason } from "./runtime/keys.js"
export type { Manifest, PartRecord } from "./runtime/manifest.js"
export type { ExportResult } from "./runtime/pipeline.js"
export {
  defineFormat,
  defineSink,
  defineSource,
  FormatDriver,
  PLUGIN_API_VERSION,
  SinkDriver,
  SourceDriver,
  type AnyPlugin,
  type BatchTransform,
  type FormatDriverShape,
  type FormatPlugin,
  type PartEncoder,
  type PluginContext,
  type SinkCapabilities,
  type SinkDriverShape,
  type SinkPlugin,
  type SourceDriverShape,
  type SourcePlugin,
  type SourceQuery,
  type SourceResult,
  type StoredObject,
  type UploadHandle
} from "./runtime/plugin.js"
export {
  ProgressReporter,
  silentProgress,
  type ExportOutcome,
  type ExportProgress,
  type ProgressReporterShape
} from "./runtime/progress.js"
export type { ExportRun } from "./runtime/run.js"
export { ByteSize, parseByteSize } from "./runtime/size.js"
export {
  postgresStateLayer,
  sqliteStateLayer,
  stateLayerFor,
  StateStore,
  type CursorState,
  type RunRecord,
  type StateStoreShape
} from "./state/index.js"
