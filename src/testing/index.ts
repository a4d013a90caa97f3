/**
 * `rivet-export/testing`: the kit for plugin authors — the sink conformance suite (for vitest) and an in-memory
 * source and sink for tests and examples.
 */
export { runSinkConformance, sinkConformanceCases } from "./sink-conformance.js"
export type { SinkConformanceCase, SinkConformanceOptions, TestRegistrar } from "./sink-conformance.js"
export { memorySink, memorySource } from "./memory.js"
export type {
  MemorySink,
  MemorySinkCall,
  MemorySinkOptions,
  MemorySource,
  MemorySourceOptions,
  MemoryTable
} from "./memory.js"
