import * as Schema from "effect/Schema"
import { type ModeList, modeKey } from "./mode.js"
import { ExportCore } from "./model.js"

/** The export's own keys, `mode:` limited to the modes given (each mode decodes its keys itself). */
export const exportKeys = (modes: ModeList) => Schema.Struct({ ...ExportCore.fields, mode: Schema.optional(modeKey(modes)) })
