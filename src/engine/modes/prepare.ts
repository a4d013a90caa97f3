import type * as Effect from "effect/Effect"
import type { RivetError } from "../../core/errors.js"
import type { ExportContext } from "./context.js"
import { runnable } from "./define.js"
import type { PreparedMode } from "./mode.js"

/** Resolves the export's mode against the source (columns, keys, stored cursor) before anything runs. */
export const prepareMode = (ctx: ExportContext): Effect.Effect<PreparedMode, RivetError> => runnable(ctx.spec.mode).prepare(ctx)
