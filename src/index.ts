/**
 * Rivet's public API: run exports from code, and write your own sources, formats and sinks.
 * Importing this module never loads a cloud SDK; built-in plugins load on first use.
 */
export { loadConfig, runExports, runExportsEffect, type ConfigInput, type RunExportsOptions } from "./api.js"
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
  SinkError,
  SourceError,
  StateError,
  exitCodeOf,
  type RivetError,
  type SinkErrorReason
} from "./runtime/errors.js"
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
export { ProgressReporter, silentProgress, type ExportOutcome, type ExportProgress } from "./runtime/progress.js"
export type { ExportRun } from "./runtime/run.js"
export { ByteSize, parseByteSize } from "./runtime/size.js"
