import * as FileSystem from "@effect/platform/FileSystem"
import type { PlatformError } from "@effect/platform/Error"
import * as Effect from "effect/Effect"
import { ConfigError, describeCause } from "../core/errors.js"

/** What went wrong with a file, in the operating system's words ("ENOENT: no such file or directory, open …"). */
export const fileProblem = (error: PlatformError): string =>
  describeCause(error._tag === "SystemError" && error.cause !== undefined ? error.cause : error)

/** The bytes of the config file given with --config, or a ConfigError naming it. */
export const readConfigBytes = (file: string): Effect.Effect<Uint8Array, ConfigError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFile(file)).pipe(
    Effect.mapError(
      (error) =>
        new ConfigError({
          path: file,
          message: `cannot read the config file: ${fileProblem(error)}`,
          hint: "check the --config path"
        })
    )
  )
