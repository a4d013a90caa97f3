import * as Schema from "effect/Schema"
import { placeholderProblem } from "../placeholders.js"

/** The `destination:` block of `type: local`. */
export const LocalConfig = Schema.Struct({
  path: Schema.String.pipe(
    Schema.nonEmptyString({ message: () => "path must not be empty (use . for the config file's directory)" }),
    // No file system accepts a NUL byte in a path; other control characters are legal but always a mistake.
    // eslint-disable-next-line no-control-regex
    Schema.filter((path) => (/[\u0000-\u001f\u007f]/.test(path) ? "path must not contain control characters (NUL, newline, tab, …)" : true)),
    Schema.filter((path) => placeholderProblem("path", path) ?? true)
  ).annotations({
    title: "path",
    description:
      "Directory the files are written to. A relative path is relative to the config file's directory; absolute paths and `..` are allowed (it is your directory; file names inside it can never escape it). Created if missing. Placeholders such as {date} or {export} are not expanded and are refused."
  })
}).annotations({
  identifier: "LocalDestination",
  description: "Files on a local (or mounted) file system, written to a dot-temp file and renamed into place."
})

export type LocalConfig = typeof LocalConfig.Type
