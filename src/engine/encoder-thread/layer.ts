import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import type { ExportConfig } from "../../config/model.js"
import type { FormatError } from "../../core/errors.js"
import { type EncoderThreadSupport, FormatDriver, type FormatDriverShape } from "../../core/plugin.js"
import { makeEncoderThread } from "./first-part.js"
import type { EncoderInit } from "./protocol.js"
import { encoderThreadsAvailable } from "./thread.js"

/** A declared module as the thread's `import()` takes it: a URL, or an absolute path made one. */
const moduleUrl = (module: string | URL): string =>
  module instanceof URL ? module.href : path.isAbsolute(module) ? pathToFileURL(module).href : module

/** What an export's encoder thread starts with: the format's declaration and the export's decoded format config. */
export const encoderInit = (format: string, config: unknown, support: EncoderThreadSupport): EncoderInit => ({
  format,
  module: moduleUrl(support.module),
  factory: support.factory ?? "default",
  config,
  freesBatchesAfterWrite: support.freesBatchesAfterWrite === true,
  ownsReturnedBytes: support.ownsReturnedBytes === true
})

/**
 * An export's format layer with its parts encoded on a thread of the export's own, beside the thread reading the
 * source, so an export uses a second core: when the format declares where its part encoders are
 * (`FormatPlugin.encoderThread`), the run allows it (`allowed`: not inside a lane, whose threads already use the
 * cores, and not turned off for the run), this process can start one (a second core, the built thread entry) and the
 * export is not partitioned. A partitioned export encodes on the reading thread: each of its parts makes a round trip
 * to the thread (open, write, finish), and with many partitions those cost more time and memory than the second core
 * gives back (docs/partitioning.md, "Bounded memory"). Only the driver's `open` moves; its schema check stays here.
 */
export const withEncoderThread = (
  format: Layer.Layer<FormatDriver, FormatError>,
  spec: ExportConfig,
  allowed: boolean
): Layer.Layer<FormatDriver, FormatError> => {
  const support = spec.format.plugin.encoderThread
  if (!allowed || support === undefined || spec.partition !== undefined) return format
  return Layer.scoped(
    FormatDriver,
    Effect.gen(function* () {
      const driver = yield* FormatDriver
      if (!encoderThreadsAvailable()) return driver
      const open = makeEncoderThread(
        encoderInit(spec.format.plugin.type, spec.format.config, support),
        yield* Effect.scope,
        driver.open
      )
      return {
        ...driver,
        // An `open` effect may be run once per part (encode-parts.ts): each run opens a part of its own.
        open: (schema, part) => Effect.zipRight(driver.validate(schema), Effect.suspend(() => open(schema, part)))
      } satisfies FormatDriverShape
    })
  ).pipe(Layer.provide(format))
}
