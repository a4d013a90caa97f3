import * as Schema from "effect/Schema"

/**
 * The `destination:` block of `type: stdout`: no keys besides `type`. A record of `never` rather than
 * `Schema.Struct({})`, which would accept any key even with `onExcessProperty: "error"`.
 */
export const StdoutConfig = Schema.Record({
  key: Schema.String,
  value: Schema.Never.annotations({ message: () => "unknown key: a stdout destination takes no keys besides type" })
}).annotations({
  identifier: "StdoutDestination",
  description:
    "Standard output, for piping into another program. No manifest or _SUCCESS marker; logs go to stderr."
})

export type StdoutConfig = typeof StdoutConfig.Type
