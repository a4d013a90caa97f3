/**
 * The plugin contract, one file per role under `plugin/`: what every plugin shares (`base.ts`), sources, part
 * encoders (`encoder.ts`) and how they run on a thread (`encoder-thread.ts`), formats, sinks, and the view that
 * holds plugins of any config type (`any.ts`). Importers keep this path.
 */
export * from "./plugin/base.js"
export * from "./plugin/source.js"
export * from "./plugin/changes.js"
export * from "./plugin/encoder.js"
export * from "./plugin/format.js"
export * from "./plugin/encoder-thread.js"
export * from "./plugin/sink.js"
export * from "./plugin/any.js"
