import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { baseQuery, type ExportContext } from "../context.js"
import { defineMode } from "../define.js"
import { planFingerprint } from "../fingerprint.js"
import type { PreparedMode } from "../mode.js"
import { singleRun } from "../single.js"

/** Every row of the table or query, in one statement. */
const prepareFull = (ctx: ExportContext): Effect.Effect<PreparedMode> =>
  Effect.succeed(
    singleRun(ctx, {
      fingerprint: planFingerprint(ctx, { mode: "full" }),
      queryOf: () => baseQuery(ctx.spec),
      details: {},
      track: []
    })
  )

export const fullMode = defineMode({
  kind: "full",
  summary: "full (every row)",
  keys: Schema.Struct({}),
  read: () => Either.right({ kind: "full" as const }),
  behaviour: () => ({
    prepare: prepareFull,
    lint: ({ at, table, maxFileSize }) =>
      table === undefined || maxFileSize !== undefined
        ? []
        : [
            {
              severity: "note",
              path: at("table"),
              message: `mode: full writes all of '${table}' into one file per run; for a large table that is one very large file`,
              hint: "set max_file_size (e.g. 512MiB) to split it into parts, or use mode: chunked to read it in key ranges (optionally in parallel)"
            }
          ]
  })
})
