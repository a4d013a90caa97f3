import * as Effect from "effect/Effect"
import type { PartEncoderFactory } from "../../../core/plugin.js"
import { textParts } from "../text/parts.js"
import type { CsvConfig } from "./config.js"
import { csvPartOpener } from "./encoder.js"

/**
 * CSV parts from batches, gzip-compressed when configured, as the driver's `open` makes them after its schema check:
 * what an encoder thread imports, in a module of its own (csv/index.ts names it).
 */
export const csvParts: PartEncoderFactory<CsvConfig> = (config) => Effect.succeed(textParts("csv", csvPartOpener, config.compression))
