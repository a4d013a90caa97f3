import * as Layer from "effect/Layer"
import type { ExportConfig, RivetConfig } from "../config/model.js"
import type { PluginContext } from "../core/plugin.js"
import { withEncoderThread } from "./encoder-thread/layer.js"
import { guardedFormat, guardedSink, guardedSource } from "./plugin-guard.js"

type Env = Readonly<Record<string, string | undefined>> | undefined

/** The largest `parallel` among the config's exports: how many results its source may hold open at once. */
const widestParallel = (config: RivetConfig): number =>
  Math.max(1, ...config.exports.map((spec) => spec.mode.parallel))

const pluginContext = (config: RivetConfig, env: Env, concurrency: number, exportName?: string): PluginContext => ({
  configDir: config.configDir,
  exportName,
  env: env ?? process.env,
  concurrency
})

/**
 * The source driver shared by a config's exports, sized for the widest export times the exports run at once
 * (`parallel_exports`). A worker thread passes `concurrency: 1`: it reads one chunk at a time on its own connections.
 */
export const sourceLayer = (config: RivetConfig, env: Env, concurrency = widestParallel(config) * (config.parallelExports ?? 1)) =>
  guardedSource({ kind: "source", type: config.source.plugin.type, exportName: undefined }, () =>
    config.source.make(pluginContext(config, env, concurrency))
  )

/** How an export's drivers are built for what runs them. */
export interface ExportLayerOptions {
  /**
   * Whether the export's parts may be encoded on an encoder thread of its own (`withEncoderThread` decides the rest):
   * `rivet run` unless turned off; never inside a lane, nor for `rivet validate` or `rivet plan`, which encode nothing.
   */
  readonly encoderThread?: boolean | undefined
}

/** The format and sink drivers of one export (`rivet run`, `rivet validate`, chunk worker threads). */
export const exportLayer = (config: RivetConfig, spec: ExportConfig, env: Env, options: ExportLayerOptions = {}) => {
  const context = pluginContext(config, env, widestParallel(config), spec.name)
  const format = guardedFormat({ kind: "format", type: spec.format.plugin.type, exportName: spec.name }, () => spec.format.make(context))
  return Layer.merge(
    withEncoderThread(format, spec, options.encoderThread === true),
    guardedSink({ kind: "sink", type: spec.destination.plugin.type, exportName: spec.name }, () =>
      spec.destination.make(context)
    )
  )
}
