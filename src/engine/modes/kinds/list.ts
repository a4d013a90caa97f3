import type { ModeList } from "../../../config/mode.js"
import { cdcMode } from "./cdc.js"
import { chunkedMode } from "./chunked.js"
import { fullMode } from "./full.js"
import { incrementalMode } from "./incremental.js"
import { keysetMode } from "./keyset.js"
import { timeWindowMode } from "./time-window.js"

/**
 * Every mode a config may name, the default first. Adding a mode is a module beside these and an entry here: the
 * config's keys, `mode:`'s values, the JSON Schema, `rivet check` and the run all derive from this list.
 */
export const MODES = [fullMode, incrementalMode, chunkedMode, keysetMode, timeWindowMode, cdcMode] as const satisfies ModeList
