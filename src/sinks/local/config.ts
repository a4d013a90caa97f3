import * as Schema from "effect/Schema"

/** The `destination:` block of `type: local`. */
export const LocalConfig = Schema.Struct({
  path: Schema.String.pipe(
    Schema.nonEmptyString({ message: () => "path must not be empty (use . for the config file's directory)" })
  ).annotations({
    title: "path",
    description:
      "Directory the files are written to. A relative path is relative to the config file's directory; absolute paths and `..` are allowed (it is your directory; file names inside it can never escape it). Created if missing."
  })
}).annotations({
  identifier: "LocalDestination",
  description: "Files on a local (or mounted) file system, written to a dot-temp file and renamed into place."
})

export type LocalConfig = typeof LocalConfig.Type
