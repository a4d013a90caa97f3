import { holdV8Flag } from "./v8-flags.js"

/**
 * Keeps the CLI's young generation (V8's new space) at its initial size instead of letting it grow to 2 × 16 MiB.
 * The reading thread's values live in ArrayBuffers, off the JS heap, so its young objects are small and short-lived
 * (a wrapper per row and per buffer): a big new space only delays their collection, and the ArrayBuffers they hold
 * stay allocated until it runs. Measured on bench_2m → Parquet: peak RSS −30 to −40 MB (bench/LOG.md, "Memory,
 * session of 2026-12-04").
 *
 * `--max-semi-space-size` cannot be changed once the process runs, but V8 reads the growth factor at each
 * collection: at 1, every isolate of the process (encoder and lane threads too) keeps the size it started with.
 * Starting a worker thread resets V8's flags to the command line's, so the factor is set again for each new worker.
 * Not done when the user sizes the young generation (`NODE_OPTIONS=--max-semi-space-size=16` restores V8's
 * default), nor by the library API. Imported first by bin/rivet.js, before the CLI's modules load (loading them
 * alone would grow the young generation).
 */
holdV8Flag("--semi-space-growth-factor=1", /semi[-_]space/)
