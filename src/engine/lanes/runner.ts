import * as fs from "node:fs"
import { availableParallelism } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import type { RivetConfig } from "../../config/model.js"
import { ConfigError } from "../../core/errors.js"
import type { UnitContext } from "../modes/unit-context.js"
import { type LaneSettings, startLanes } from "./pool.js"
import { inProcessRunner } from "../modes/chunk-work.js"

export type { LaneSettings } from "./pool.js"

const LANES_VARIABLE = "RIVET_LANES"
/** `parallel`'s own maximum: more worker threads than that could never be used. */
const MAX_WORKER_THREADS = 64
/** The cores this thread and the export's encoder thread keep busy: a worker thread gains only beyond them. */
const MAIN_THREAD_CORES = 2

/**
 * Worker threads may run a config's chunks when the caller gave their entry module, a worker can rebuild everything
 * from the config file alone (no plugins passed in code) and `RIVET_LANES` is not `0`. `RIVET_LANES=N` sets how many
 * at most; unset, one per core beyond two (see workerThreadsFor).
 */
export const laneSettings = (
  config: RivetConfig,
  env: Readonly<Record<string, string | undefined>>,
  workerEntry: URL | undefined
): Effect.Effect<LaneSettings | undefined, ConfigError> => {
  const raw = env[LANES_VARIABLE]?.trim()
  const threads = raw === undefined || raw === "" ? undefined : Number(raw)
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 0 && threads <= MAX_WORKER_THREADS)) {
    return Effect.fail(
      new ConfigError({
        path: LANES_VARIABLE,
        message: `${LANES_VARIABLE}=${raw} is not a number of worker threads from 0 to ${MAX_WORKER_THREADS}`,
        hint: `unset it to start one worker thread per core beyond two, or set ${LANES_VARIABLE}=0 to run every chunk in the main thread`
      })
    )
  }
  return Effect.succeed(
    workerEntry !== undefined && config.reloadable === true && threads !== 0
      ? { configFile: path.resolve(config.origin), env: { ...env }, threads, workerEntry }
      : undefined
  )
}

/**
 * How many of an export's `lanes` run in worker threads: `RIVET_LANES` when set, else one per core beyond the two
 * that this thread and its encoder thread keep busy; never more than `lanes − 1`, as this thread runs chunks too. The
 * other lanes read in this thread. On two cores, `parallel: 2` with a worker thread took ~1.1× the wall time,
 * ~1.15× the CPU and ~85 MB more than both lanes in this thread (docs/benchmarks.md).
 */
export const workerThreadsFor = (lanes: number, settings: LaneSettings, cores: number = availableParallelism()): number =>
  Math.max(0, Math.min(lanes - 1, settings.threads ?? cores - MAIN_THREAD_CORES))

/**
 * Whether worker threads can take this export's chunks: a transform and quality gates are JS values of this thread,
 * and a stream destination (stdout) cannot take parts from several threads in order. Run from sources (vitest) the
 * entry is not built, and chunks stay in this thread.
 */
const workersCanRun = (ctx: UnitContext, settings: LaneSettings): boolean =>
  ctx.spec.transform === undefined &&
  ctx.gates === undefined &&
  ctx.sink.capabilities.markers &&
  fs.existsSync(fileURLToPath(settings.workerEntry))

/**
 * The export's chunk runner: `lanes` at once, some in worker threads when the run allows it and the cores pay; with
 * `overlap`, a lane takes its next chunk as soon as the one before is read.
 */
export const chunkRunnerFor = (ctx: UnitContext, settings: LaneSettings | undefined) => (lanes: number, overlap: boolean) => {
  if (settings !== undefined && workersCanRun(ctx, settings)) {
    const threads = workerThreadsFor(lanes, settings)
    if (threads > 0) return startLanes(ctx, settings, { lanes, threads, overlap })
  }
  return inProcessRunner(ctx, lanes, overlap)
}
