/**
 * `rivet-export/plugin`: the plugin contract only — `defineSource` / `defineFormat` / `defineSink`, the driver tags, the
 * batch model and the tagged errors. A plugin package imports this entry (or `rivet-export`) and nothing else of Rivet;
 * it loads neither the runtime nor any built-in plugin.
 */
export {
  batchByteLength,
  batchFromColumns,
  batchToRows,
  columnValues,
  formatLogicalType,
  InvalidValue,
  makeBatch,
  valueAt,
  type Batch,
  type BatchSchema,
  type Column,
  type ColumnData,
  type LogicalType,
  type Value
} from "./core/batch.js"
export type {
  BinaryData,
  BoolData,
  FixedData,
  Float32Data,
  Float64Data,
  Int16Data,
  Int32Data,
  Int64Data,
  Layout,
  ListData
} from "./core/columns/data.js"
export {
  ConfigError,
  FormatError,
  IntegrityError,
  PluginError,
  SchemaDriftError,
  TableCommitError,
  SinkError,
  SourceError,
  StateError,
  type RivetError,
  type SinkErrorReason
} from "./core/errors.js"
export { invalidKeyReason } from "./core/keys.js"
export { ByteSize } from "./core/size.js"
/** Config fields database sources share (a URL or its parts, seconds): `SourceConfig.connectionUrlFields({ … })`, `SourceConfig.resolveConnection`. */
export * as SourceConfig from "./core/source/config-fields.js"
export * as Sink from "./core/sink/index.js"
export type {
  EnvVarNameOptions,
  RawUpload,
  SinkOperation,
  SinkPrimitives,
  UploadRules,
  UsageProblem
} from "./core/sink/index.js"
export {
  defineFormat,
  defineSink,
  defineSource,
  FormatDriver,
  PLUGIN_API_VERSION,
  SinkDriver,
  SourceDriver,
  tableOf,
  type AnyPlugin,
  type CappedWrite,
  type EncoderThreadHooks,
  type EncoderThreadSupport,
  type BatchTransform,
  type CreateOutcome,
  type ChangeFeed,
  type ChangeLogStatus,
  type ChangePosition,
  type ChangeRequest,
  type ColumnRef,
  type FeedEnd,
  type DiscoverRequest,
  type FormatDriverShape,
  type FormatPlugin,
  type PartEncoder,
  type PartEncoderFactory,
  type PartInfo,
  type PartOpener,
  type PendingUpload,
  type PendingUploads,
  type PluginContext,
  type QueryBase,
  type RenderDialect,
  type RenderedChunk,
  type RenderedOrBatches,
  type RenderedPartEncoder,
  type RowFilter,
  type SinkCapabilities,
  type SinkCheckReport,
  type SinkDriverShape,
  type SinkPlugin,
  type SourceChanges,
  type SourceDiscovery,
  type SourceDriverShape,
  type SourceIdentity,
  type SourcePlugin,
  type SourceQuery,
  type SourceResult,
  type StoredObject,
  type UploadHandle,
  type WriteReceipt
} from "./core/plugin.js"
export type {
  ColumnProblem,
  DiscoveredColumn,
  DiscoveredTable,
  Discovery,
  EstimateSource,
  SkippedTable
} from "./core/discovery/model.js"
