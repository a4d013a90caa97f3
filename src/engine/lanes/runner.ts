import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { RivetConfig } from "../../config/model.js"
import type { ExportContext } from "../modes/context.js"
import { type LaneSettings, startLanes } from "./pool.js"
import { inProcessRunner } from "../modes/chunk-work.js"

export type { LaneSettings } from "./pool.js"

/** The built worker entry. Run from sources (vitest) there is no .js beside this module: chunks stay in-process. */
const WORKER_URL = new URL("./worker.js", import.meta.url)

/**
 * Worker threads may run a config's chunks when a worker can rebuild everything from the config file alone (no
 * plugins passed in code) and `RIVET_LANES` is not `0`.
 */
export const laneSettings = (
  config: RivetConfig,
  env: Readonly<Record<string, string | undefined>>
): LaneSettings | undefined =>
  config.reloadable === true && env["RIVET_LANES"] !== "0"
    ? { configFile: path.resolve(config.origin), env: { ...env } }
    : undefined

/**
 * Whether worker threads can take this export's chunks: a transform and quality gates are JS values of this thread,
 * and a stream destination (stdout) cannot take parts from several threads in order.
 */
const workersCanRun = (ctx: ExportContext): boolean =>
  ctx.spec.transform === undefined &&
  ctx.gates === undefined &&
  ctx.sink.capabilities.markers &&
  fs.existsSync(fileURLToPath(WORKER_URL))

/** The export's chunk runner: `lanes` worker threads when the run allows it (one chunk would not gain), else in-process. */
export const chunkRunnerFor = (ctx: ExportContext, settings: LaneSettings | undefined) => (lanes: number) =>
  settings !== undefined && lanes > 1 && workersCanRun(ctx)
    ? startLanes(ctx, settings, lanes, WORKER_URL)
    : inProcessRunner(ctx, lanes)
