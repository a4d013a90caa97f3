/**
 * `Sink`: build a sink driver from a store's primitives (`Sink.make`) and the config fields cloud sinks share.
 */
export { concatParts } from "./buffered.js"
export { invalidKeyMessage, make, PROBE_NAME } from "./make.js"
export type { RawUpload, SinkOperation, SinkPrimitives, UsageProblem, UploadRules } from "./primitives.js"
export {
  describedString,
  envVarNameField,
  isEnvVarName,
  normalizePrefix,
  prefixField,
  uploadConcurrencyField,
  type EnvVarNameOptions
} from "./config.js"
export { isNetworkErrorCode } from "./network.js"
export { usageErrors, type Refused, type Wording } from "./refusal.js"
