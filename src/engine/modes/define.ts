import type * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Schema from "effect/Schema"
import type { LintFinding } from "../../config/finding.js"
import { decodeBlock } from "../../config/issues.js"
import type { ExportMode, ModeDefinition, ModeLintContext, ModeReadContext } from "../../config/mode.js"
import type { ExportConfig } from "../../config/model.js"
import type { ConfigError, RivetError } from "../../core/errors.js"
import type { ChangeRequest } from "../../core/plugin.js"
import type { ExportContext } from "./context.js"
import type { PreparedMode } from "./mode.js"

/** An export's mode with its run behaviour: how it resolves against the source and runs. */
export interface RunnableMode extends ExportMode {
  readonly prepare: (ctx: ExportContext) => Effect.Effect<PreparedMode, RivetError>
  /**
   * A mode that reads the source's change log (`SourceChanges`): the export's request, without a stored position,
   * for what works on the log outside a run — `rivet doctor` inspects it, `rivet state reset` drops its slot.
   */
  readonly changeLog?: ((spec: ExportConfig) => ChangeRequest) | undefined
}

/** What a mode's settings mean for a run; everything but `prepare` has a default (one unit at a time, no lints). */
export interface ModeBehaviour {
  readonly prepare: RunnableMode["prepare"]
  readonly parallel?: number | undefined
  readonly maxAttempts?: number | undefined
  readonly rowKeyColumns?: ReadonlyArray<string> | undefined
  readonly resumableWith?: string | undefined
  /** The settings ask to keep reading, a window a run (see `ModeSpec.followable`). */
  readonly continuous?: boolean | undefined
  readonly sharedRead?: ExportMode["sharedRead"] | undefined
  readonly lint?: ((context: ModeLintContext) => ReadonlyArray<LintFinding>) | undefined
  readonly changeLog?: RunnableMode["changeLog"]
}

/** Everything one mode declares (see docs/architecture.md, "Adding a mode"). */
export interface ModeSpec<K extends string, F extends Schema.Struct.Fields, S extends { readonly kind: K }> {
  readonly kind: K
  /** What the mode does, in a clause: `chunked (key ranges, optionally in parallel)`. */
  readonly summary: string
  /** Its own YAML keys, a `Schema.Struct`. A key two modes share has the same schema in both (kinds/checkpoint-keys.ts). */
  readonly keys: Schema.Struct<F> & Schema.Schema<Schema.Schema.Type<Schema.Struct<F>>, Schema.Schema.Encoded<Schema.Struct<F>>>
  readonly required?: ModeDefinition["required"]
  readonly writesSeveralParts?: boolean | undefined
  readonly distributable?: boolean | undefined
  readonly tracksCursor?: boolean | undefined
  /** Can run continuously (`rivet run --follow`): each run then reads a window and the export runs again. */
  readonly followable?: boolean | undefined
  /** The settings from the decoded keys; a problem names its config path under `at.path`. */
  readonly read: (keys: Schema.Schema.Type<Schema.Struct<F>>, at: ModeReadContext) => Either.Either<S, ReadonlyArray<ConfigError>>
  readonly behaviour: (settings: S) => ModeBehaviour
}

/** Makes a mode of its declaration: the config decodes with it, and the decoded mode carries its run behaviour. */
export const defineMode = <const K extends string, F extends Schema.Struct.Fields, S extends { readonly kind: K }>(
  spec: ModeSpec<K, F, S>
): ModeDefinition<K, ModeSpec<K, F, S>["keys"]> => {
  const writesSeveralParts = spec.writesSeveralParts ?? false
  const bind = (settings: S): RunnableMode => {
    const behaviour = spec.behaviour(settings)
    return {
      kind: spec.kind,
      settings,
      writesSeveralParts,
      parallel: behaviour.parallel ?? 1,
      maxAttempts: behaviour.maxAttempts,
      rowKeyColumns: behaviour.rowKeyColumns ?? [],
      resumableWith: behaviour.resumableWith,
      distributable: spec.distributable ?? false,
      tracksCursor: spec.tracksCursor ?? false,
      followable: spec.followable ?? false,
      continuous: behaviour.continuous ?? false,
      sharedRead: behaviour.sharedRead ?? (() => undefined),
      lint: behaviour.lint ?? (() => []),
      prepare: behaviour.prepare,
      changeLog: behaviour.changeLog
    }
  }
  return {
    kind: spec.kind,
    summary: spec.summary,
    keys: spec.keys,
    required: spec.required,
    writesSeveralParts,
    decode: (raw, at) => Either.flatMap(decodeBlock(spec.keys, raw, at.path), (decoded) => Either.map(spec.read(decoded, at), bind))
  }
}

/** The decoded mode's run behaviour: every mode a config decodes with is made by {@link defineMode}. */
const isRunnable = (mode: ExportMode): mode is RunnableMode => "prepare" in mode

export const runnable = (mode: ExportMode): RunnableMode => {
  if (isRunnable(mode)) return mode
  throw new Error(`mode '${mode.kind}' was decoded without its run behaviour: make it with defineMode`)
}
