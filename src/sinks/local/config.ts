import * as Schema from "effect/Schema"

const hasParentComponent = (path: string): boolean => path.split(/[\\/]/).includes("..")

/** The `destination:` block of `type: local`. */
export const LocalConfig = Schema.Struct({
  // nonEmptyString last: JSON Schema output skips a plain filter and would drop the description with it.
  path: Schema.String.pipe(
    Schema.filter((path) =>
      hasParentComponent(path)
        ? `path ${JSON.stringify(path)} contains a \`..\` component; write the directory without \`..\` (an absolute path is fine)`
        : true
    ),
    Schema.nonEmptyString({ message: () => "path must not be empty (use . for the config file's directory)" })
  ).annotations({
    title: "path",
    description:
      "Directory the files are written to. A relative path is relative to the config file's directory; absolute paths are allowed, `..` components are not. Created if missing."
  })
}).annotations({
  identifier: "LocalDestination",
  description: "Files on a local (or mounted) file system, written to a dot-temp file and renamed into place."
})

export type LocalConfig = typeof LocalConfig.Type
