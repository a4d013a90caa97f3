import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { requiredKey } from "../../src/config/mode.js"
import { baseQuery } from "../../src/engine/modes/context.js"
import { defineMode } from "../../src/engine/modes/define.js"
import { planFingerprint } from "../../src/engine/modes/fingerprint.js"
import { singleRun } from "../../src/engine/modes/single.js"

/**
 * A mode that is not Rivet's, declared the way a mode is added: `mode: sample` exports the first `sample_rows` rows
 * of the table in key order. Nothing else in the tree knows it; the test passes it beside the built-in modes.
 */
export const sampleMode = defineMode({
  kind: "sample",
  summary: "sample (the first rows in key order)",
  keys: Schema.Struct({
    sample_rows: Schema.optional(Schema.Int.pipe(Schema.between(1, 1000, { message: () => "must be a whole number from 1 to 1000" }))),
    sample_key: Schema.optional(Schema.String)
  }),
  required: { keys: ["sample_rows"] },
  read: (keys, { path }) =>
    keys.sample_rows === undefined
      ? Either.left([requiredKey(path, "sample_rows", "sample", "100")])
      : Either.right({ kind: "sample" as const, rows: keys.sample_rows, key: keys.sample_key ?? "id" }),
  behaviour: (settings) => ({
    prepare: (ctx) =>
      Effect.succeed(
        singleRun(ctx, {
          fingerprint: planFingerprint(ctx, { mode: "sample", rows: settings.rows, key: settings.key }),
          queryOf: () => ({ ...baseQuery(ctx.spec), orderBy: [settings.key], limit: settings.rows }),
          details: {},
          track: []
        })
      ),
    rowKeyColumns: [settings.key],
    lint: ({ at }) =>
      settings.rows > 500 ? [{ severity: "note", path: at("sample_rows"), message: "a sample of more than 500 rows", hint: undefined }] : []
  })
})
