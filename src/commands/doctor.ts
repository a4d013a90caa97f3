import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { ExportConfig, RivetConfig } from "../config/model.js"
import { ConfigError, PluginError, type RivetError, SourceError } from "../core/errors.js"
import { formatBytes } from "../core/size.js"
import { guardedSink, guardedSource } from "../engine/plugin-guard.js"
import { baseQuery } from "../engine/modes/context.js"
import { runnable } from "../engine/modes/define.js"
import { type ChangeLogStatus, type PluginContext, SinkDriver, type SinkDriverShape, SourceDriver, type SourceDriverShape } from "../core/plugin.js"
import type { TableFormatSpec } from "../config/table-format.js"
import { DEFAULT_RETRY_POLICY } from "../core/retry.js"
import { tableNameOf, tableOf } from "../engine/table-format/table-format.js"

export interface DoctorCheck {
  /** `Source Postgres`, `Export orders`, `Destination S3(my-bucket)`, `Change log orders (wal_level)`. */
  readonly name: string
  readonly error?: RivetError | undefined
  /** What a passing check could not do (a probe it could not remove): shown under its `[OK]` line. */
  readonly notes?: ReadonlyArray<string> | undefined
  /** What a passing check found, after its name: `[OK]  Change log orders (wal_level): logical`. */
  readonly detail?: string | undefined
  /** A passing check that needs attention, and what to do (`[WARN]` and a hint): it does not fail doctor. */
  readonly warning?: string | undefined
  /** `mode: cdc`: the export's replication slot as the source showed it; null when it does not exist (yet). */
  readonly slot?: DoctorSlot | null | undefined
}

export interface DoctorSlot {
  readonly name: string
  readonly active: boolean
  readonly confirmed: string | null
  readonly retainedBytes: number | null
}

export interface DoctorOptions {
  /**
   * A change log's slot that retains more WAL than this is a warning: the server keeps every WAL segment from the
   * slot's position on, so a slot nothing reads any more fills its disk. Default {@link RETAINED_WAL_WARNING_BYTES}.
   */
  readonly retainedWalWarningBytes?: number | undefined
  /**
   * `mode: cdc`: each export's published position in the state, so the source can say how far it is behind the log
   * (an export missing here has none yet).
   */
  readonly storedPositions?: ReadonlyMap<string, string> | undefined
}

/** 1 GiB: well past what a scheduled export leaves between two runs, well before a server's disk is at risk. */
export const RETAINED_WAL_WARNING_BYTES = 1024 ** 3

/** What a plugin made outside a run (doctor, state reset) is given. */
export const pluginContext = (config: RivetConfig, exportName?: string): PluginContext => ({
  configDir: config.configDir,
  exportName,
  env: process.env
})

const attempt = (name: string, check: Effect.Effect<unknown, RivetError>): Effect.Effect<DoctorCheck> =>
  Effect.match(reportGuarded(check), {
    onSuccess: (result) => {
      const notes = notesOf(result)
      return notes.length === 0 ? { name } : { name, notes }
    },
    onFailure: (error) => ({ name, error })
  })

/** The notes of a sink check's report (a sink that answers void, or anything else, has none). */
const notesOf = (result: unknown): ReadonlyArray<string> => {
  const notes: unknown = typeof result === "object" && result !== null ? (result as { notes?: unknown }).notes : undefined
  return Array.isArray(notes) ? notes.filter((note): note is string => typeof note === "string") : []
}

/** A plugin that misbehaved (a guard's PluginError, see plugin-guard.ts) is a failed check, not a crash. */
const reportGuarded = <A>(effect: Effect.Effect<A, RivetError>): Effect.Effect<A, RivetError> =>
  Effect.catchAllDefect(effect, (defect) => (defect instanceof PluginError ? Effect.fail(defect) : Effect.die(defect)))

/** An export's table: its catalog reachable, and its current metadata one Rivet can extend (or no table yet). */
const tableCheck = (table: TableFormatSpec, sink: SinkDriverShape): Effect.Effect<DoctorCheck> =>
  Effect.match(
    Effect.scoped(Effect.flatMap(tableOf(table, sink, DEFAULT_RETRY_POLICY), ({ catalog }) => Effect.map(catalog.check, (detail) => `${catalog.label}: ${detail}`))),
    {
      onSuccess: (detail): DoctorCheck => ({ name: `Table ${tableNameOf(table)}`, detail }),
      onFailure: (error): DoctorCheck => ({ name: `Table ${tableNameOf(table)}`, error })
    }
  )

const slotText = (slot: DoctorSlot): string =>
  [
    `${slot.name} (${slot.active ? "active" : "inactive"})`,
    slot.confirmed === null ? "no confirmed position" : `confirmed at ${slot.confirmed}`,
    slot.retainedBytes === null ? "retained WAL unknown" : `${formatBytes(slot.retainedBytes)} of WAL retained`
  ].join(", ")

/** The slot's line: ok, or a warning when it holds more WAL than the threshold. */
const slotCheck = (spec: ExportConfig, slot: string, status: ChangeLogStatus, threshold: number): DoctorCheck => {
  const name = `Change log ${spec.name} (slot)`
  if (status.slot === undefined) return { name, detail: `${slot} does not exist yet (the first run creates it)`, slot: null }
  const found: DoctorSlot = {
    name: status.slot.name,
    active: status.slot.active,
    confirmed: status.slot.confirmed ?? null,
    retainedBytes: status.slot.retainedBytes ?? null
  }
  const check = { name, detail: slotText(found), slot: found }
  if (found.retainedBytes === null || found.retainedBytes <= threshold) return check
  return {
    ...check,
    warning:
      `more than ${formatBytes(threshold)} of WAL retained: the server keeps the WAL from the slot's position on until a run ` +
      `confirms past it, so a slot nothing reads fills its disk — run the export (rivet run -c <config>), or drop the slot of an ` +
      `export that is gone or paused (rivet state reset -c <config> -e ${spec.name}); max_slot_wal_keep_size caps what a slot may retain`
  }
}

/**
 * `mode: cdc`: what the source says of the export's change log — each check (server settings, rights, the table, the
 * publication), then its slot and the WAL it retains. A source without change data capture is a failed check.
 */
const changeLogChecks = (
  source: SourceDriverShape,
  spec: ExportConfig,
  threshold: number,
  stored: string | undefined
): Effect.Effect<ReadonlyArray<DoctorCheck>> => {
  const changeLog = runnable(spec.mode).changeLog
  if (changeLog === undefined) return Effect.succeed([])
  const name = `Change log ${spec.name}`
  if (source.changes === undefined) {
    const error = new ConfigError({
      path: `export '${spec.name}'.mode`,
      message: `the ${source.label} source cannot read a change log (mode: cdc)`,
      hint: "use a source with change data capture (postgres, mysql), or another mode"
    })
    return Effect.succeed([{ name, error }])
  }
  const request = { ...changeLog(spec), from: stored }
  return reportGuarded(source.changes.inspect(request)).pipe(
    Effect.map((status): ReadonlyArray<DoctorCheck> => [
      ...status.checks.map((check): DoctorCheck => ({
        name: `${name} (${check.name})`,
        ...(check.ok
          ? { detail: check.detail }
          : { error: new SourceError({ source: source.label, message: check.detail, hint: check.hint, retryable: false }) })
      })),
      ...(status.positionOnServer === false ? [] : [slotCheck(spec, request.slot, status, threshold)])
    ]),
    Effect.catchAll((error) => Effect.succeed([{ name, error }]))
  )
}

/**
 * Checks what a run needs before running it: the source answers, each export's query resolves
 * (and its column types can be exported), each `mode: cdc` export's change log is ready (and its slot does not hold
 * too much WAL), and each destination is reachable and writable. Destinations shared by several exports are checked
 * once.
 */
export const doctor = (config: RivetConfig, options: DoctorOptions = {}): Effect.Effect<ReadonlyArray<DoctorCheck>> =>
  Effect.gen(function* () {
    const threshold = options.retainedWalWarningBytes ?? RETAINED_WAL_WARNING_BYTES
    const checks: Array<DoctorCheck> = []
    const sourceLayer = guardedSource({ kind: "source", type: config.source.plugin.type, exportName: undefined }, () =>
      config.source.make(pluginContext(config))
    )
    const sourceChecks = Effect.gen(function* () {
      const source = yield* SourceDriver
      const checked = yield* attempt(`Source ${source.label}`, source.check)
      const detail =
        checked.error || source.connectionDetail === undefined
          ? undefined
          : yield* Effect.orElseSucceed(reportGuarded(source.connectionDetail), () => undefined)
      const connected = detail === undefined ? checked : { ...checked, detail }
      checks.push(connected)
      if (connected.error) return
      for (const spec of config.exports) {
        const query = { ...baseQuery(spec), batchSize: 1 }
        checks.push(yield* attempt(`Export ${spec.name}`, Effect.scoped(source.open(query))))
        checks.push(...(yield* changeLogChecks(source, spec, threshold, options.storedPositions?.get(spec.name))))
      }
    })
    const built = yield* Effect.either(reportGuarded(Effect.scoped(Effect.provide(sourceChecks, sourceLayer))))
    if (built._tag === "Left") checks.push({ name: `Source ${config.source.plugin.type}`, error: built.left })

    const seen = new Set<string>()
    for (const spec of config.exports) {
      const layer = guardedSink({ kind: "sink", type: spec.destination.plugin.type, exportName: spec.name }, () =>
        spec.destination.make(pluginContext(config, spec.name))
      )
      const check = Effect.gen(function* () {
        const sink = yield* SinkDriver
        const identity = `${sink.label} ${sink.uri()}`
        const destination = seen.has(identity) ? [] : [yield* attempt(`Destination ${sink.label}`, sink.check)]
        seen.add(identity)
        const table = spec.tableFormat === undefined || destination[0]?.error !== undefined ? [] : [yield* tableCheck(spec.tableFormat, sink)]
        return [...destination, ...table]
      })
      const result = yield* Effect.either(reportGuarded(Effect.scoped(Effect.provide(check, Layer.fresh(layer)))))
      if (result._tag === "Left") checks.push({ name: `Destination ${spec.destination.plugin.type}`, error: result.left })
      else checks.push(...result.right)
    }
    return checks
  })
