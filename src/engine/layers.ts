import * as Layer from "effect/Layer"
import type { ExportConfig, RivetConfig } from "../config/model.js"
import type { PluginContext } from "../core/plugin.js"
import { guardedFormat, guardedSink, guardedSource } from "./plugin-guard.js"

type Env = Readonly<Record<string, string | undefined>> | undefined

/** The largest `parallel` among the config's exports: how many results its source may hold open at once. */
const widestParallel = (config: RivetConfig): number =>
  Math.max(1, ...config.exports.map((spec) => (spec.mode.kind === "chunked" ? spec.mode.parallel : 1)))

const pluginContext = (config: RivetConfig, env: Env, concurrency: number, exportName?: string): PluginContext => ({
  configDir: config.configDir,
  exportName,
  env: env ?? process.env,
  concurrency
})

/**
 * The source driver shared by a config's exports. A worker thread passes `concurrency: 1`: it reads one chunk at a
 * time on its own connections.
 */
export const sourceLayer = (config: RivetConfig, env: Env, concurrency = widestParallel(config)) =>
  guardedSource({ kind: "source", type: config.source.plugin.type, exportName: undefined }, () =>
    config.source.make(pluginContext(config, env, concurrency))
  )

/**
 * A partitioned export encodes on the reading thread: each of its parts makes a round trip to an encoder thread
 * (open, write, finish), and with many partitions those round trips cost more time and memory than the second
 * core gives back (docs/partitioning.md, "Bounded memory").
 */
const formatEnv = (spec: ExportConfig, env: Env): Env =>
  spec.partition === undefined ? env : { ...(env ?? process.env), RIVET_ENCODER_THREAD: "0" }

/** The format and sink drivers of one export (`rivet run`, `rivet validate`, chunk worker threads). */
export const exportLayer = (config: RivetConfig, spec: ExportConfig, env: Env) => {
  const context = pluginContext(config, env, widestParallel(config), spec.name)
  const formatContext = pluginContext(config, formatEnv(spec, env), widestParallel(config), spec.name)
  return Layer.merge(
    guardedFormat({ kind: "format", type: spec.format.plugin.type, exportName: spec.name }, () => spec.format.make(formatContext)),
    guardedSink({ kind: "sink", type: spec.destination.plugin.type, exportName: spec.name }, () =>
      spec.destination.make(context)
    )
  )
}
