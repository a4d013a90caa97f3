import { holdV8Flag } from "./v8-flags.js"

/**
 * For a run with a partitioned export: every part it opens and closes (thousands, with many distinct values) leaves
 * its encoder, upload and fibers behind as garbage old enough to reach the old generation, and V8 lets that grow to
 * a few times the live heap before a full collection. Growing it by 15 % instead collects sooner. V8 reads the
 * factor at each full collection, so setting it once the config is read takes effect; starting a worker thread
 * resets V8's flags to the command line's, so it is set again for each (as young-generation.ts does). Not done when
 * the user sets it, nor for unpartitioned runs (their garbage dies young). Measured in docs/partitioning.md.
 */
export const collectPartsSooner = (): void => holdV8Flag("--heap-growing-percent=15", /heap[-_]growing[-_]percent/)
