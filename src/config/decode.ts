import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { LogicalType } from "../core/batch.js"
import { ConfigError } from "../core/errors.js"
import { formatBytes } from "../core/size.js"
import type { AnyFormatPlugin, AnySinkPlugin, AnySourcePlugin } from "../core/plugin.js"
import { advisoryNotices } from "./advisory.js"
import { didYouMean } from "../core/did-you-mean.js"
import { decodeBlock, joinPath, knownKeys, unknownKeyError } from "./issues.js"
import {
  configure,
  DEFAULT_BATCH_SIZE,
  DEFAULT_FORMAT,
  ExportCore,
  ExportName,
  type ExportConfig,
  MAX_PARALLEL_EXPORTS,
  type RivetConfig,
  TopLevel
} from "./model.js"
import { parseLogicalType } from "../core/columns/logical.js"
import { metaColumnsOf } from "./meta-columns.js"
import { readNotifications } from "./notifications.js"
import { type ColumnMask, readMasking } from "./masking.js"
import { partitionOf } from "./partition.js"
import { rustTypeHint } from "./rust-keys.js"
import { tableFormatOf } from "./table-format.js"
import { exportKeys } from "./export-keys.js"
import { decodeMode, keyModes, type ModeList } from "./mode.js"
import { type SharedReader, sharedReadProblems } from "./shared-read.js"
import { type PlacedExport, sharedDestinationExports, sharedDestinationProblems } from "./shared-destination.js"

/**
 * The smallest `max_file_size`: a part holds its header or footer and at least a row group, and a smaller cap
 * would mostly be a unit forgotten (a plain number is bytes).
 */
export const MIN_MAX_FILE_SIZE = 64 * 1024

/** Finds plugins by their YAML `type`. Implemented by the registry (built-ins plus `plugins:`). */
export interface PluginResolver {
  readonly source: (type: string) => Effect.Effect<AnySourcePlugin | undefined, ConfigError>
  readonly format: (type: string) => Effect.Effect<AnyFormatPlugin | undefined, ConfigError>
  readonly sink: (type: string) => Effect.Effect<AnySinkPlugin | undefined, ConfigError>
  readonly known: {
    readonly sources: ReadonlyArray<string>
    readonly formats: ReadonlyArray<string>
    readonly sinks: ReadonlyArray<string>
  }
}

export interface DecodeInput {
  readonly value: unknown
  readonly configDir: string
  readonly origin: string
  readonly plugins: PluginResolver
  /** The modes exports may name (engine/modes/kinds/list.ts, plus any given in code). */
  readonly modes: ModeList
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value)

/** Collects every problem instead of stopping at the first, so `rivet check` can list them all. */
class Problems {
  readonly list: Array<ConfigError> = []
  add(...errors: ReadonlyArray<ConfigError>) {
    this.list.push(...errors)
  }
  decode<A, I>(schema: Parameters<typeof decodeBlock<A, I>>[0], input: unknown, path: string): A | undefined {
    const result = decodeBlock(schema, input, path)
    if (Either.isLeft(result)) {
      this.add(...result.left)
      return undefined
    }
    return result.right
  }
}

const requireMapping = (value: unknown, path: string, problems: Problems, what: string): value is Record<string, unknown> => {
  if (isRecord(value)) return true
  problems.add(new ConfigError({ path, message: `expected a mapping (${what})`, hint: undefined }))
  return false
}

/** Picks the plugin named by `type` in a block and decodes the rest of the block with its schema. */
const decodePluginBlock = <P extends AnySourcePlugin | AnySinkPlugin>(
  block: unknown,
  path: string,
  what: string,
  lookup: (type: string) => Effect.Effect<P | undefined, ConfigError>,
  known: ReadonlyArray<string>,
  problems: Problems
): Effect.Effect<{ plugin: P; config: unknown } | undefined> =>
  Effect.gen(function* () {
    if (!requireMapping(block, path, problems, `${what} with a 'type' key`)) return undefined
    const { type, ...rest } = block
    if (typeof type !== "string") {
      problems.add(
        new ConfigError({ path: joinPath(path, ["type"]), message: "is required", hint: `one of: ${known.join(", ")}` })
      )
      return undefined
    }
    const plugin = yield* Effect.catchAll(lookup(type), (error) => {
      problems.add(error)
      return Effect.succeed(undefined)
    })
    if (!plugin) {
      const suggestion = didYouMean(type, known)
      problems.add(
        new ConfigError({
          path: joinPath(path, ["type"]),
          message: `unknown ${what} type '${type}'`,
          hint: rustTypeHint(what, type, known) ?? (suggestion ? `did you mean '${suggestion}'?` : `available: ${known.join(", ")}`)
        })
      )
      return undefined
    }
    const config = problems.decode<unknown, unknown>(plugin.config, rest, path)
    return config === undefined ? undefined : { plugin, config }
  })

const isExportName = Schema.is(ExportName)

const decodeExport = (
  raw: unknown,
  index: number,
  input: DecodeInput,
  problems: Problems,
  placed: Array<PlacedExport>
): Effect.Effect<ExportConfig | undefined> =>
  Effect.gen(function* () {
    const path = `exports[${index}]`
    if (!requireMapping(raw, path, problems, "an export")) return undefined
    const formatType = typeof raw["format"] === "string" ? raw["format"] : DEFAULT_FORMAT
    const format = yield* Effect.catchAll(input.plugins.format(formatType), (error) => {
      problems.add(error)
      return Effect.succeed(undefined)
    })
    if (!format && typeof raw["format"] === "string") {
      const suggestion = didYouMean(formatType, input.plugins.known.formats)
      problems.add(
        new ConfigError({
          path: `${path}.format`,
          message: `unknown format '${formatType}'`,
          hint: suggestion ? `did you mean '${suggestion}'?` : `available: ${input.plugins.known.formats.join(", ")}`
        })
      )
    }
    // Split the export's keys between the runtime (core), the modes and the format plugin; anything else is unknown.
    const coreKeys = knownKeys(ExportCore)
    const modeKeys = keyModes(input.modes)
    const formatKeys = format ? knownKeys(format.config) : []
    const core: Record<string, unknown> = {}
    const modeBlock: Record<string, unknown> = {}
    const formatBlock: Record<string, unknown> = {}
    for (const [key, value] of Object.entries(raw)) {
      if (coreKeys.includes(key)) core[key] = value
      else if (modeKeys.has(key)) modeBlock[key] = value
      else if (formatKeys.includes(key)) formatBlock[key] = value
      else if (format) problems.add(unknownKeyError(path, key, [...coreKeys, ...modeKeys.keys(), ...formatKeys]))
    }
    const decoded = problems.decode(exportKeys(input.modes), core, path)
    const formatConfig = format ? problems.decode<unknown, unknown>(format.config, formatBlock, path) : undefined
    const destinationBlock = yield* decodePluginBlock(
      raw["destination"],
      `${path}.destination`,
      "destination",
      input.plugins.sink,
      input.plugins.known.sinks,
      problems
    )
    const destination = destinationBlock && configure(destinationBlock.plugin, destinationBlock.config)
    // Recorded even when the rest of the export has problems: a collision with another export sharing the
    // destination is reported in the same pass as those.
    const name = decoded?.name ?? (isExportName(raw["name"]) ? raw["name"] : undefined)
    if (name !== undefined && destination) placed.push({ index, name, destination })
    // Decoded even when the export's own keys have problems (a `mode:` that names no mode aside), so that one pass
    // reports every key's problem.
    const kindWritten = typeof raw["mode"] === "string" ? raw["mode"] : undefined
    const { mode, problems: modeProblems } =
      kindWritten !== undefined && !input.modes.some((each) => each.kind === kindWritten)
        ? { mode: undefined, problems: [] }
        : decodeMode(input.modes, kindWritten, modeBlock, {
            path,
            hasTable: typeof raw["table"] === "string",
            hasQuery: typeof raw["query"] === "string"
          })
    if (!decoded) {
      problems.add(...modeProblems)
      return undefined
    }
    if ((decoded.table === undefined) === (decoded.query === undefined)) {
      problems.add(
        new ConfigError({
          path,
          message: `export '${decoded.name}': specify exactly one of 'table' or 'query'`,
          hint: "table: orders  — or —  query: SELECT ... FROM orders"
        })
      )
    }
    const columnTypes = new Map<string, LogicalType>()
    const masks: Array<ColumnMask> = []
    for (const [column, override] of Object.entries(decoded.columns ?? {})) {
      if (typeof override !== "string" && override.mask !== undefined) masks.push({ column, method: override.mask })
      if (typeof override !== "string" && override.type === undefined) {
        if (override.mask === undefined) {
          problems.add(new ConfigError({ path: joinPath(path, ["columns", column]), message: "says nothing: give a type, a mask or both", hint: "e.g. { type: decimal(18,2) } or { mask: hmac_sha256 }" }))
        }
        continue
      }
      // `amount: decimal(18,2)` (the short form other tools use) is the same as `amount: { type: decimal(18,2) }`.
      const text = typeof override === "string" ? override : override.type!
      const type = parseLogicalType(text)
      if (type) columnTypes.set(column, type)
      else
        problems.add(
          new ConfigError({
            path: joinPath(path, typeof override === "string" ? ["columns", column] : ["columns", column, "type"]),
            message: `unknown type '${text}'`,
            hint: "e.g. decimal(38,9), int64, float64, string, timestamptz, date, json, bytes, list<int32>"
          })
        )
    }
    const quality = decoded.quality
    if (quality?.row_count_min !== undefined && quality.row_count_max !== undefined && quality.row_count_min > quality.row_count_max) {
      problems.add(
        new ConfigError({
          path: `${path}.quality.row_count_min`,
          message: `is greater than row_count_max (${quality.row_count_min} > ${quality.row_count_max})`,
          hint: undefined
        })
      )
    }
    const { kinds: metaColumns, problems: metaProblems } = metaColumnsOf(decoded.meta_columns, path)
    problems.add(...metaProblems)
    problems.add(...modeProblems)
    // Several parts on one stream are several files back to back: concatenated Parquet files cannot be read, and
    // concatenated CSV parts repeat the header mid-stream. NDJSON lines concatenate cleanly.
    const kind = decoded.mode ?? input.modes[0].kind
    if (destination?.plugin.type === "stdout" && format?.type !== "ndjson") {
      const splitBy = input.modes.find((each) => each.kind === kind)?.writesSeveralParts ? `mode: ${kind}` : decoded.max_file_size !== undefined ? "max_file_size" : undefined
      if (splitBy !== undefined)
        problems.add(
          new ConfigError({
            path: splitBy === "max_file_size" ? `${path}.max_file_size` : `${path}.mode`,
            message: `${splitBy} writes several parts, which the stdout destination would concatenate into one unreadable ${format?.type ?? formatType} stream`,
            hint: "write to a local or s3 destination, drop max_file_size / use mode: full or incremental, or use format: ndjson"
          })
        )
    }
    if (decoded.max_file_size !== undefined && decoded.max_file_size < MIN_MAX_FILE_SIZE)
      problems.add(
        new ConfigError({
          path: `${path}.max_file_size`,
          message: `max_file_size is ${formatBytes(decoded.max_file_size)}, below the smallest cap Rivet keeps (64 KiB)`,
          hint: "use at least 64KiB (a plain number is bytes: write a unit, e.g. max_file_size: 256MiB)"
        })
      )
    const partition = partitionOf(decoded, path, destination?.plugin.type)
    problems.add(...partition.problems)
    for (const mask of masks) {
      // A directory name is written as the value itself: a masked column there would publish what the mask hides.
      if (partition.spec?.columns.some((by) => by.column === mask.column)) {
        problems.add(
          new ConfigError({
            path: joinPath(path, ["columns", mask.column, "mask"]),
            message: `column '${mask.column}' is masked, so it cannot be a partition_by column: its values would name the directories`,
            hint: "partition by another column, or remove the mask"
          })
        )
      }
    }
    const table = decoded.table?.split(".")
    const tableFormat = tableFormatOf(decoded.table_format, path, {
      name: decoded.name,
      sourceSchema: table?.length === 2 ? table[0] : undefined,
      format: formatType,
      destinationType: destination?.plugin.type,
      modeKind: kind,
      partitionKeepColumns: decoded.partition_keep_columns
    })
    problems.add(...tableFormat.problems)
    if (!format || formatConfig === undefined || !destination || !mode) return undefined
    return {
      name: decoded.name,
      table: table ? (table.length === 2 ? { schema: table[0], name: table[1]! } : { name: table[0]! }) : undefined,
      query: decoded.query,
      mode,
      skipEmpty: decoded.skip_empty ?? false,
      quality: decoded.quality,
      onSchemaDrift: decoded.on_schema_drift ?? "warn",
      batchSize: decoded.batch_size ?? DEFAULT_BATCH_SIZE,
      maxFileSize: decoded.max_file_size,
      columnTypes,
      masks,
      allowUnmasked: decoded.allow_unmasked ?? [],
      metaColumns,
      // An Iceberg table's identity partition columns stay in its data files, where every reader looks for them.
      partition: tableFormat.spec && partition.spec ? { ...partition.spec, keepColumns: true } : partition.spec,
      tableFormat: tableFormat.spec,
      notices: advisoryNotices(decoded, path),
      format: configure(format, formatConfig),
      destination
    } satisfies ExportConfig
  })

/**
 * Decodes a parsed config in two phases: the envelope (`source.type`, `exports[].format`,
 * `exports[].destination.type`) picks the plugins, then each plugin's schema decodes its own block.
 * Returns every problem found, each naming its config path.
 */
export const validateConfig = (input: DecodeInput): Effect.Effect<Either.Either<RivetConfig, ReadonlyArray<ConfigError>>> =>
  Effect.gen(function* () {
    const problems = new Problems()
    if (!requireMapping(input.value, "(root)", problems, "with 'source' and 'exports'")) return Either.left(problems.list)
    const top = problems.decode(TopLevel, input.value, "")
    // `source:` with nothing after it is YAML null: as missing as no line at all.
    const sourceMissing = input.value["source"] === undefined || input.value["source"] === null
    if (sourceMissing) {
      problems.add(
        new ConfigError({
          path: "source",
          message: "is missing",
          hint: "add the database to read, e.g. source: { type: postgres, url_env: DATABASE_URL }"
        })
      )
    }
    // An unknown or mistyped top-level key (`load:` of the Rust rivet) must not hide the exports' own problems.
    const exportsList = top?.exports ?? (Array.isArray(input.value["exports"]) ? (input.value["exports"] as ReadonlyArray<unknown>) : undefined)
    if (exportsList === undefined) return Either.left(problems.list)
    if (exportsList.length === 0) {
      problems.add(new ConfigError({ path: "exports", message: "at least one export must be defined", hint: undefined }))
    }
    const sourceBlock = sourceMissing
      ? undefined
      : yield* decodePluginBlock(
          input.value["source"],
          "source",
          "source",
          input.plugins.source,
          input.plugins.known.sources,
          problems
        )
    const source = sourceBlock && configure(sourceBlock.plugin, sourceBlock.config)
    const exports: Array<ExportConfig> = []
    const placed: Array<PlacedExport> = []
    const seen = new Map<string, number>()
    const sharing = new Map<string, Array<SharedReader>>()
    for (const [index, raw] of exportsList.entries()) {
      const decoded = yield* decodeExport(raw, index, input, problems, placed)
      if (!decoded) continue
      const previous = seen.get(decoded.name)
      if (previous !== undefined) {
        problems.add(
          new ConfigError({
            path: `exports[${index}].name`,
            message: `duplicate export name '${decoded.name}' (also exports[${previous}])`,
            hint: "export names must be unique: they name the output files and the state"
          })
        )
        continue
      }
      seen.set(decoded.name, index)
      exports.push(decoded)
      const read = decoded.mode.sharedRead(decoded.name, decoded.table)
      if (read !== undefined) {
        const reader = { index, name: decoded.name, read }
        const earlier = sharing.get(read.resource)
        if (earlier === undefined) sharing.set(read.resource, [reader])
        else {
          problems.add(...sharedReadProblems(reader, earlier))
          earlier.push(reader)
        }
      }
    }
    problems.add(...sharedDestinationProblems(placed, input.configDir))
    const masking = top?.masking === undefined ? undefined : readMasking(top.masking)
    if (masking instanceof ConfigError) problems.add(masking)
    const hmacExport = exports.find((spec) => spec.masks.some((mask) => mask.method === "hmac_sha256"))
    if (hmacExport !== undefined && masking === undefined) {
      problems.add(
        new ConfigError({
          path: "masking",
          message: `export '${hmacExport.name}' masks with hmac_sha256, which needs a key`,
          hint: "add masking: { key_env: RIVET_MASK_KEY } and set the variable to a secret of at least 16 bytes"
        })
      )
    }
    if (problems.list.length > 0 || !source || masking instanceof ConfigError) return Either.left(problems.list)
    const shared = sharedDestinationExports(placed, input.configDir)
    return Either.right({
      configDir: input.configDir,
      origin: input.origin,
      source,
      exports: exports.map((spec) => (shared.has(spec.name) ? { ...spec, sharedDestination: true } : spec)),
      ...(top?.telemetry ? { telemetry: { endpoint: top.telemetry.endpoint, serviceName: top.telemetry.service_name } } : {}),
      ...(masking ? { masking } : {}),
      ...(top?.notifications ? { notifications: readNotifications(top.notifications) } : {}),
      ...(top?.parallel_exports === undefined
        ? {}
        : { parallelExports: top.parallel_exports === true ? Math.min(MAX_PARALLEL_EXPORTS, exports.length) : top.parallel_exports === false ? 1 : top.parallel_exports })
    } satisfies RivetConfig)
  })

/** Like `validateConfig`, failing with the first problem. */
export const decodeConfig = (input: DecodeInput): Effect.Effect<RivetConfig, ConfigError> =>
  Effect.flatMap(validateConfig(input), (result) =>
    Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left[0]!)
  )
