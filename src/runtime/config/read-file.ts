import * as Effect from "effect/Effect"
import * as fs from "node:fs/promises"
import { ConfigError, describeCause } from "../errors.js"

/** The bytes of the config file given with --config, or a ConfigError naming it. */
export const readConfigBytes = (file: string): Effect.Effect<Uint8Array, ConfigError> =>
  Effect.tryPromise({
    try: () => fs.readFile(file),
    catch: (cause) =>
      new ConfigError({
        path: file,
        message: `cannot read the config file: ${describeCause(cause)}`,
        hint: "check the --config path"
      })
  })
