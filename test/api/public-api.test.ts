/**
 * Pins the public API. The `expectTypeOf` assertions are checked by `npm run typecheck` (vitest runs them as
 * no-ops), so an accidental breaking change to an exported signature fails the build; the last test pins the
 * runtime exports. Changing the API on purpose means changing this file too — and the docs, and a version bump.
 */
import type * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import { describe, expect, expectTypeOf, it } from "vitest"
import type {
  AnyPlugin,
  Batch,
  BatchSchema,
  BatchTransform,
  CappedWrite,
  ConfigError,
  ConfigInput,
  ExportResult,
  ExportRun,
  FormatDriverShape,
  FormatError,
  FormatPlugin,
  Manifest,
  PartEncoder,
  PartRecord,
  PluginContext,
  PluginError,
  ProgressReporter,
  RivetError,
  RivetConfig,
  RivetConfigInput,
  Row,
  RunExportsOptions,
  SinkCapabilities,
  SinkCheckReport,
  SinkDriverShape,
  SinkError,
  SinkPlugin,
  SourceDriverShape,
  SourceError,
  SourcePlugin,
  SourceQuery,
  SourceResult,
  StateError,
  StoredObject,
  UploadHandle,
  WriteReceipt,
  ColumnData,
  Value
} from "../../src/index.js"
import {
  defineConfig,
  defineFormat,
  defineSink,
  defineSource,
  FormatDriver,
  loadConfig,
  mapRows,
  PLUGIN_API_VERSION,
  runExports,
  runExportsEffect,
  SinkDriver,
  SourceDriver
} from "../../src/index.js"
import * as mainEntry from "../../src/index.js"
import * as pluginEntry from "../../src/plugin.js"

type Config = { readonly path: string }
type Encoded = { readonly path: string }
type RequiredKeys<T> = { [K in keyof T]-?: undefined extends T[K] ? never : K }[keyof T]

/** The required members of the driver shapes at plugin API version 1. */
interface MinimalSink {
  readonly label: string
  readonly uri: (key?: string) => string
  readonly capabilities: SinkCapabilities
  readonly check: Effect.Effect<void, SinkError>
  readonly put: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<void, SinkError>
  readonly begin: (key: string, contentType: string) => Effect.Effect<UploadHandle, SinkError>
}
interface MinimalFormat {
  readonly extension: string
  readonly contentType: string
  readonly compression: string
  readonly validate: (schema: BatchSchema) => Effect.Effect<void, FormatError>
  readonly open: (schema: BatchSchema) => Effect.Effect<PartEncoder, FormatError>
}
interface MinimalSource {
  readonly label: string
  readonly displayUrl: string
  readonly check: Effect.Effect<void, SourceError>
  readonly open: (query: SourceQuery) => Effect.Effect<SourceResult, SourceError, Scope.Scope>
}

describe("public API types", () => {
  it("define* take a definition without kind/apiVersion and return the plugin value", () => {
    expectTypeOf(defineSink<Config, Encoded>).returns.toEqualTypeOf<SinkPlugin<Config, Encoded>>()
    expectTypeOf(defineFormat<Config, Encoded>).returns.toEqualTypeOf<FormatPlugin<Config, Encoded>>()
    expectTypeOf(defineSource<Config, Encoded>).returns.toEqualTypeOf<SourcePlugin<Config, Encoded>>()
    type SinkDefinition = Parameters<typeof defineSink<Config, Encoded>>[0]
    expectTypeOf<keyof SinkDefinition>().toEqualTypeOf<"type" | "apiVersion" | "config" | "description" | "make">()
    expectTypeOf<SinkDefinition["type"]>().toEqualTypeOf<string>()
    expectTypeOf<SinkDefinition["apiVersion"]>().toEqualTypeOf<number | undefined>()
    expectTypeOf<SinkDefinition["description"]>().toEqualTypeOf<string | undefined>()
    expectTypeOf<SinkDefinition["config"]>().toMatchTypeOf<Schema.Schema<Config, Encoded>>()
    expectTypeOf<Schema.Schema<Config, Encoded>>().toMatchTypeOf<SinkDefinition["config"]>()
    expectTypeOf<SinkDefinition["make"]>().toEqualTypeOf<
      (config: Config, context: PluginContext) => Layer.Layer<SinkDriver, SinkError>
    >()
    expectTypeOf<keyof SinkPlugin>().toEqualTypeOf<"kind" | "type" | "apiVersion" | "config" | "description" | "make">()
    expectTypeOf<SinkPlugin["kind"]>().toEqualTypeOf<"sink">()
    expectTypeOf<FormatPlugin<Config>["make"]>().toEqualTypeOf<
      (config: Config, context: PluginContext) => Layer.Layer<FormatDriver, FormatError>
    >()
    expectTypeOf<SourcePlugin<Config>["make"]>().toEqualTypeOf<
      (config: Config, context: PluginContext) => Layer.Layer<SourceDriver, SourceError>
    >()
    expectTypeOf(PLUGIN_API_VERSION).toEqualTypeOf<1>()
    // A plugin with its own config block fits `plugins` (a Schema's type is invariant: this once failed).
    expectTypeOf<SinkPlugin<Config, Encoded>>().toMatchTypeOf<AnyPlugin>()
    expectTypeOf<FormatPlugin<{ readonly level: number }, { readonly level?: string }>>().toMatchTypeOf<AnyPlugin>()
    expectTypeOf<SourcePlugin<Config, Encoded>>().toMatchTypeOf<NonNullable<RunExportsOptions["plugins"]>[number]>()
    expectTypeOf<keyof PluginContext>().toEqualTypeOf<"configDir" | "exportName" | "env" | "concurrency">()
  })

  it("the sink contract: block uploads, small puts, optional list/read/sweep", () => {
    // A sink written against plugin API 1 with only the required members must keep compiling: adding an optional
    // member is fine, adding a required one (or changing one) breaks every third-party sink.
    expectTypeOf<MinimalSink>().toMatchTypeOf<SinkDriverShape>()
    expectTypeOf<RequiredKeys<SinkDriverShape>>().toEqualTypeOf<keyof MinimalSink>()
    // put and check may answer more than void (a receipt, doctor notes): a sink answering void still fits.
    expectTypeOf<SinkDriverShape["put"]>().toEqualTypeOf<
      (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<WriteReceipt | void, SinkError>
    >()
    expectTypeOf<SinkDriverShape["begin"]>().toEqualTypeOf<
      (key: string, contentType: string) => Effect.Effect<UploadHandle, SinkError>
    >()
    expectTypeOf<SinkDriverShape["check"]>().toEqualTypeOf<Effect.Effect<SinkCheckReport | void, SinkError>>()
    expectTypeOf<SinkDriverShape["list"]>().toEqualTypeOf<Effect.Effect<ReadonlyArray<StoredObject>, SinkError> | undefined>()
    expectTypeOf<SinkDriverShape["sweep"]>().toEqualTypeOf<Effect.Effect<ReadonlyArray<string>, SinkError> | undefined>()
    expectTypeOf<SinkDriverShape["read"]>().toEqualTypeOf<((key: string) => Stream.Stream<Uint8Array, SinkError>) | undefined>()
    expectTypeOf<UploadHandle>().toEqualTypeOf<{
      readonly writeBlock: (index: number, bytes: Uint8Array) => Effect.Effect<void, SinkError>
      readonly complete: (blockCount: number) => Effect.Effect<void, SinkError>
      readonly abort: Effect.Effect<void, SinkError>
    }>()
    expectTypeOf<SinkCapabilities>().toEqualTypeOf<{
      readonly markers: boolean
      readonly blockSize: number
      readonly concurrency: number
      readonly releasesBytes?: boolean
    }>()
    expectTypeOf<Context.Tag.Service<SinkDriver>>().toEqualTypeOf<SinkDriverShape>()
  })

  it("the format and source contracts", () => {
    expectTypeOf<MinimalFormat>().toMatchTypeOf<FormatDriverShape>()
    expectTypeOf<RequiredKeys<FormatDriverShape>>().toEqualTypeOf<keyof MinimalFormat>()
    expectTypeOf<MinimalSource>().toMatchTypeOf<SourceDriverShape>()
    expectTypeOf<RequiredKeys<SourceDriverShape>>().toEqualTypeOf<keyof MinimalSource>()
    expectTypeOf<PartEncoder>().toEqualTypeOf<{
      readonly write: (batch: Batch) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
      readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
      readonly writeCapped?: (batch: Batch, from: number, maxBytes: number) => Effect.Effect<CappedWrite, FormatError>
    }>()
    expectTypeOf<SourceDriverShape["open"]>().toEqualTypeOf<
      (query: SourceQuery) => Effect.Effect<SourceResult, SourceError, Scope.Scope>
    >()
    expectTypeOf<SourceResult>().toEqualTypeOf<{
      readonly schema: BatchSchema
      readonly batches: Stream.Stream<Batch, SourceError>
    }>()
    expectTypeOf<Batch>().toEqualTypeOf<{
      readonly schema: BatchSchema
      readonly columns: ReadonlyArray<ColumnData>
      readonly rowCount: number
    }>()
    expectTypeOf<ReturnType<typeof pluginEntry.batchToRows>>().toEqualTypeOf<Array<Record<string, Value>>>()
  })

  it("running exports: Promise and Effect entry points, options, results", () => {
    expectTypeOf<Parameters<typeof runExports<never>>[0]>().toEqualTypeOf<ConfigInput | string>()
    expectTypeOf<Parameters<typeof runExports<never>>[1]>().toMatchTypeOf<RunExportsOptions | undefined>()
    expectTypeOf(runExports).returns.toEqualTypeOf<Promise<ReadonlyArray<ExportResult>>>()
    expectTypeOf(runExportsEffect<never>).returns.toEqualTypeOf<
      Effect.Effect<ReadonlyArray<ExportRun>, ConfigError | SourceError | StateError | PluginError>
    >()
    expectTypeOf(loadConfig).returns.toEqualTypeOf<Effect.Effect<RivetConfig, ConfigError>>()
    // Every option stays optional; each pinned option keeps its type (new optional options are fine).
    expectTypeOf<RequiredKeys<RunExportsOptions>>().toEqualTypeOf<never>()
    expectTypeOf<RunExportsOptions["configDir"]>().toEqualTypeOf<string | undefined>()
    expectTypeOf<RunExportsOptions["env"]>().toEqualTypeOf<Readonly<Record<string, string | undefined>> | undefined>()
    expectTypeOf<RunExportsOptions["plugins"]>().toEqualTypeOf<ReadonlyArray<AnyPlugin> | undefined>()
    expectTypeOf<RunExportsOptions["only"]>().toEqualTypeOf<ReadonlyArray<string> | undefined>()
    expectTypeOf<RunExportsOptions["transforms"]>().toEqualTypeOf<Readonly<Record<string, BatchTransform>> | undefined>()
    expectTypeOf<RunExportsOptions["progress"]>().toEqualTypeOf<Layer.Layer<ProgressReporter> | undefined>()
    // Programs read these fields: none may disappear or change type (new fields are fine).
    expectTypeOf<ExportResult>().toMatchTypeOf<{
      readonly exportName: string
      readonly runId: string
      readonly rows: number
      readonly bytes: number
      readonly retries: number
      readonly parts: ReadonlyArray<PartRecord>
      readonly uri: string
      readonly manifest?: Manifest | undefined
      readonly durationMs: number
    }>()
    expectTypeOf<ExportResult["parts"][number]>().toEqualTypeOf<PartRecord>()
    expectTypeOf<Extract<ExportRun, { _tag: "failure" }>["error"]>().toEqualTypeOf<RivetError>()
  })

  it("transforms: the stream-level contract and the per-row helper", () => {
    expectTypeOf<BatchTransform>().toEqualTypeOf<
      (input: SourceResult) => { readonly schema: BatchSchema; readonly batches: Stream.Stream<Batch, RivetError> }
    >()
    expectTypeOf(mapRows).parameters.toEqualTypeOf<
      [
        fn: (row: Readonly<Row>) => Readonly<Row> | null | undefined,
        outputSchema?: BatchSchema | ((input: BatchSchema) => BatchSchema)
      ]
    >()
    expectTypeOf(mapRows).returns.toEqualTypeOf<BatchTransform>()
    expectTypeOf<RivetError["_tag"]>().toEqualTypeOf<
      | "ConfigError"
      | "SourceError"
      | "FormatError"
      | "SinkError"
      | "IntegrityError"
      | "StateError"
      | "PluginError"
      | "SchemaDriftError"
      | "TableCommitError"
    >()
  })
})

describe("public API values", () => {
  it("rivet-export/plugin exports the contract and nothing of the runtime", () => {
    expect(Object.keys(pluginEntry).sort()).toEqual([
      "ByteSize",
      "ConfigError",
      "FormatDriver",
      "FormatError",
      "IntegrityError",
      "InvalidValue",
      "PLUGIN_API_VERSION",
      "PluginError",
      "SchemaDriftError",
      "Sink",
      "SinkDriver",
      "SinkError",
      "SourceConfig",
      "SourceDriver",
      "SourceError",
      "StateError",
      "TableCommitError",
      "batchByteLength",
      "batchFromColumns",
      "batchToRows",
      "columnValues",
      "defineFormat",
      "defineSink",
      "defineSource",
      "formatLogicalType",
      "invalidKeyReason",
      "makeBatch",
      "tableOf",
      "valueAt"
    ])
  })

  it("rivet keeps every runtime export (additions are fine; a removal breaks users) and includes rivet-export/plugin", () => {
    const exported = Object.keys(mainEntry)
    expect(exported).toEqual(
      expect.arrayContaining([
        "ByteSize",
        "ConfigError",
        "FormatDriver",
        "FormatError",
        "IntegrityError",
        "PLUGIN_API_VERSION",
        "PluginError",
        "ProgressReporter",
        "SchemaDriftError",
        "SinkDriver",
        "SinkError",
        "SourceDriver",
        "SourceError",
        "StateError",
        "batchToRows",
        "defineFormat",
        "defineSink",
        "defineSource",
        "exitCodeOf",
        "formatLogicalType",
        "invalidKeyReason",
        "loadConfig",
        "makeBatch",
        "mapRows",
        "parseByteSize",
        "runExports",
        "runExportsEffect",
        "silentProgress",
        "telemetryLayer"
      ])
    )
    expect(exported).toEqual(expect.arrayContaining(Object.keys(pluginEntry)))
  })

  it("the driver tags are the ones the runtime provides (plugins and runtime share them)", () => {
    expect(pluginEntry.SinkDriver).toBe(SinkDriver)
    expect(pluginEntry.FormatDriver).toBe(FormatDriver)
    expect(pluginEntry.SourceDriver).toBe(SourceDriver)
  })

  it("a config given in code is typed from the schemas: misspelt keys and wrong values do not compile", () => {
    const good = defineConfig({
      source: { type: "postgres", url_env: "DATABASE_URL" },
      exports: [
        { name: "orders", table: "orders", destination: { type: "local", path: "./out" } },
        { name: "events", query: "select 1", format: "csv", compression: "gzip", destination: { type: "s3", bucket: "b", region: "eu-west-1" } },
        { name: "dump", table: "t", format: "ndjson", destination: { type: "stdout" } }
      ]
    })
    expectTypeOf(good).toEqualTypeOf<RivetConfigInput>()
    // @ts-expect-error: `tabel` is not an export key
    defineConfig({ source: { type: "postgres", url: "postgres://x" }, exports: [{ name: "o", tabel: "orders", destination: { type: "local", path: "." } }] })
    // @ts-expect-error: `pth` is not a key of the local destination
    defineConfig({ source: { type: "postgres", url: "postgres://x" }, exports: [{ name: "o", table: "o", destination: { type: "local", pth: "." } }] })
    // @ts-expect-error: `row_group_size` belongs to Parquet, not CSV
    defineConfig({ source: { type: "postgres" }, exports: [{ name: "o", table: "o", format: "csv", row_group_size: 5, destination: { type: "local", path: "." } }] })
    // @ts-expect-error: batch_size is a number
    defineConfig({ source: { type: "postgres" }, exports: [{ name: "o", table: "o", batch_size: "10", destination: { type: "local", path: "." } }] })
    // @ts-expect-error: a stdout destination takes no keys
    defineConfig({ source: { type: "postgres" }, exports: [{ name: "o", table: "o", destination: { type: "stdout", path: "." } }] })
    // @ts-expect-error: no source type `mysqlx`
    defineConfig({ source: { type: "mysqlx" }, exports: [] })
  })

  it("plugins passed in code contribute their blocks; loadConfig's output runs as is", () => {
    const folder = defineSink({
      type: "folder",
      config: {} as Schema.Schema<{ readonly root: string }, { readonly root: string }>,
      make: () => ({}) as Layer.Layer<SinkDriver, SinkError>
    })
    expectTypeOf(folder.type).toEqualTypeOf<"folder">()
    const config = defineConfig<typeof folder>({
      source: { type: "postgres" },
      exports: [{ name: "o", table: "o", destination: { type: "folder", root: "./out" } }]
    })
    expectTypeOf(config).toMatchTypeOf<RivetConfigInput<typeof folder>>()
    // @ts-expect-error: `rot` is not a key of the folder plugin's config
    defineConfig<typeof folder>({ source: { type: "postgres" }, exports: [{ name: "o", table: "o", destination: { type: "folder", rot: "." } }] })
    const run = () => runExports({ source: { type: "postgres" }, exports: [{ name: "o", table: "o", destination: { type: "folder", root: "." } }] }, { plugins: [folder] })
    expectTypeOf(run).returns.toEqualTypeOf<Promise<ReadonlyArray<ExportResult>>>()
    const again = (loaded: RivetConfig) => runExports(loaded)
    expectTypeOf(again).returns.toEqualTypeOf<Promise<ReadonlyArray<ExportResult>>>()
  })
})
