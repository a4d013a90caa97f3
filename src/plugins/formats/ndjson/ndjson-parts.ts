import * as Effect from "effect/Effect"
import type { PartEncoderFactory } from "../../../core/plugin.js"
import { textParts } from "../text/parts.js"
import type { NdjsonConfig } from "./config.js"
import { ndjsonPartOpener } from "./encoder.js"

/**
 * NDJSON parts from batches, gzip-compressed when configured, as the driver's `open` makes them after its schema check:
 * what an encoder thread imports, in a module of its own (ndjson/index.ts names it).
 */
export const ndjsonParts: PartEncoderFactory<NdjsonConfig> = (config) =>
  Effect.succeed(textParts("ndjson", ndjsonPartOpener, config.compression))
