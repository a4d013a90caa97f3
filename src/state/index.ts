export {
  STATE_FILE_NAME,
  StateStore,
  type CommittedPart,
  type CursorState,
  type ExportSummary,
  type LeaseAcquisition,
  type LeaseHolder,
  type LeaseProof,
  type LeaseRenewal,
  type LeaseRequest,
  type FinishedRun,
  type RunRecord,
  type RunStatus,
  type SchemaBaseline,
  type StateStoreShape,
  type UnitRecord
} from "./store.js"
export {
  describeStateLocation,
  STATE_URL_VARIABLE,
  stateLayerAt,
  stateLayerFor,
  stateLocationFor,
  type StateLayerOptions,
  type StateLocation
} from "./layer.js"
export { LATEST_SCHEMA_VERSION } from "./migrations.js"
export { postgresStateLayer } from "./postgres.js"
export { sqliteStateLayer } from "./sqlite.js"
