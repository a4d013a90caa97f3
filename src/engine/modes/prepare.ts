import type * as Effect from "effect/Effect"
import * as Match from "effect/Match"
import type { RivetError } from "../../core/errors.js"
import { prepareChunked } from "./chunked.js"
import type { ExportContext } from "./context.js"
import { prepareKeyset } from "./keyset.js"
import type { PreparedMode } from "./mode.js"
import { prepareFull, prepareIncremental, prepareTimeWindow } from "./single.js"

/**
 * Resolves the export's mode against the source (columns, keys, stored cursor) before anything runs. Each mode's
 * preparation receives its own configuration, narrowed by `kind`; a mode added to the config fails to compile here.
 */
export const prepareMode = (ctx: ExportContext): Effect.Effect<PreparedMode, RivetError> =>
  Match.value(ctx.spec.mode).pipe(
    Match.discriminatorsExhaustive("kind")({
      full: () => prepareFull(ctx),
      incremental: (mode) => prepareIncremental(ctx, mode),
      time_window: (mode) => prepareTimeWindow(ctx, mode),
      chunked: (mode) => prepareChunked(ctx, mode),
      keyset: (mode) => prepareKeyset(ctx, mode)
    })
  )
