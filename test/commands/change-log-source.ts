import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { RivetConfig } from "../../src/config/model.js"
import type { SourceError } from "../../src/core/errors.js"
import {
  type AnyPlugin,
  type ChangeLogStatus,
  type ChangeRequest,
  defineSource,
  SourceDriver,
  type SourceDriverShape
} from "../../src/core/plugin.js"
import { validateConfigValue } from "../../src/registry/load-config.js"
import { memorySink } from "../../src/testing/memory.js"

/**
 * A source whose change log (`SourceChanges`) answers what a test gives it — `inspect` a fixed status, `drop` a
 * fixed outcome — and records the calls, for `rivet doctor` and `rivet state reset` without a database.
 */
export const changeLogSource = (
  options: {
    readonly status?: ChangeLogStatus
    readonly check?: Effect.Effect<void, SourceError>
    readonly inspect?: Effect.Effect<ChangeLogStatus, SourceError>
    readonly drop?: Effect.Effect<boolean, SourceError>
  } = {}
) => {
  const calls: Array<string> = []
  const driver: SourceDriverShape = {
    label: "Changelog",
    displayUrl: "changelog:",
    check: Effect.suspend(() => {
      calls.push("check")
      return options.check ?? Effect.void
    }),
    open: () => Effect.succeed({ schema: { columns: [] }, batches: Stream.empty }),
    changes: {
      open: () => Effect.die(new Error("changeLogSource: no feed in these tests")),
      confirm: () => Effect.void,
      inspect: (request: ChangeRequest) =>
        Effect.suspend(() => {
          calls.push(`inspect ${request.slot} ${request.publication}`)
          return options.inspect ?? Effect.succeed(options.status ?? { checks: [] })
        }),
      drop: (request: ChangeRequest) =>
        Effect.suspend(() => {
          calls.push(`drop ${request.slot}`)
          return options.drop ?? Effect.succeed(true)
        })
    }
  }
  const plugin = defineSource({
    type: "changelog",
    description: "A change log answering as the test says",
    config: Schema.Struct({}),
    make: () => Layer.succeed(SourceDriver, driver)
  })
  return { plugin, calls }
}

/** A config of `exports` (each to the memory sink) read from `source`, decoded with `plugins` as the CLI would. */
export const configOf = async (
  source: Readonly<Record<string, unknown>>,
  exports: ReadonlyArray<Readonly<Record<string, unknown>>>,
  plugins: ReadonlyArray<AnyPlugin>
): Promise<RivetConfig> => {
  const value = { source, exports: exports.map((spec) => ({ destination: { type: "memory" }, ...spec })) }
  const decoded = await Effect.runPromise(
    Effect.provide(validateConfigValue(value, "/tmp", "test.yaml", { plugins: [...plugins, memorySink().plugin] }), NodeFileSystem.layer)
  )
  if (Either.isLeft(decoded)) throw new Error(decoded.left.map((error) => `${error.path}: ${error.message}`).join("\n"))
  return decoded.right
}
