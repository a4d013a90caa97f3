import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { Ajv } from "ajv"
import { afterAll, describe, expect, it } from "vitest"
import { planConfig } from "../../../src/commands/plan/make.js"
import { configJsonSchema } from "../../../src/config/json-schema.js"
import { lintConfig } from "../../../src/config/lint.js"
import type { ModeList } from "../../../src/config/mode.js"
import { makeBatch } from "../../../src/core/batch.js"
import { defineSource, SourceDriver, type SourceDriverShape, type SourceQuery } from "../../../src/core/plugin.js"
import { silentProgress } from "../../../src/core/progress.js"
import { MODES } from "../../../src/engine/modes/kinds/list.js"
import { runConfig } from "../../../src/engine/run.js"
import { loadAllPlugins } from "../../../src/registry/all-plugins.js"
import { validateConfigValue } from "../../../src/registry/load-config.js"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { idSchema as schema } from "../../support/id-source.js"
import { readManifest } from "../../support/output.js"
import { sampleMode } from "../../support/sample-mode.js"

// A mode is one definition and one list entry: given `sampleMode` (test/support/sample-mode.ts) beside the built-in
// modes, config decoding, the JSON Schema, `rivet check`'s lints, `rivet plan` and `rivet run` all know it.

const WITH_SAMPLE: ModeList = [...MODES, sampleMode]
const ROWS = 40

/** Ids 1..ROWS in order; a query's limit is honoured, and its statement says what it was asked. */
const driver: SourceDriverShape = {
  label: "ids",
  displayUrl: "ids:",
  check: Effect.void,
  describe: () => Effect.succeed({ schema, primaryKey: ["id"] }),
  bounds: () => Effect.succeed({ min: "1", max: String(ROWS), hasNulls: false }),
  render: (query: SourceQuery) => `ids order by ${String(query.orderBy ?? [])} limit ${query.limit ?? "none"}`,
  open: (query: SourceQuery) => {
    const count = Math.min(query.limit ?? ROWS, ROWS)
    const ids = Array.from({ length: count }, (_, i) => BigInt(i + 1))
    return Effect.succeed({ schema, batches: Stream.make(makeBatch(schema, [ids])) })
  }
}
const source = defineSource({ type: "ids", config: Schema.Struct({}), make: () => Layer.succeed(SourceDriver, driver) })

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const configOf = (fields: Record<string, unknown>) => ({
  source: { type: "ids" },
  exports: [{ name: "ids", table: "ids", format: "csv", destination: { type: "local", path: "out" }, ...fields }]
})

const decode = (fields: Record<string, unknown>, modes?: ModeList, dir = "/tmp") =>
  Effect.runPromise(
    Effect.provide(
      validateConfigValue(configOf(fields), dir, "(test)", { plugins: [source as never], ...(modes ? { modes } : {}) }),
      NodeFileSystem.layer
    )
  )

const messages = (result: Either.Either<unknown, ReadonlyArray<{ readonly path: string; readonly message: string }>>) =>
  Either.isLeft(result) ? result.left.map((problem) => `${problem.path}: ${problem.message}`) : []

describe("a mode defined outside the built-in list", () => {
  it("decodes with its own keys, refuses them under another mode, and is unknown where it is not given", async () => {
    const decoded = await decode({ mode: "sample", sample_rows: 5 }, WITH_SAMPLE)
    if (Either.isLeft(decoded)) throw new Error(messages(decoded).join("\n"))
    expect(decoded.right.exports[0]?.mode.settings).toEqual({ kind: "sample", rows: 5, key: "id" })
    expect(decoded.right.reloadable).toBeUndefined()

    expect(messages(await decode({ mode: "sample" }, WITH_SAMPLE))).toEqual(["exports[0].sample_rows: is required with mode: sample"])
    expect(messages(await decode({ mode: "sample", sample_rows: 0 }, WITH_SAMPLE))).toEqual([
      "exports[0].sample_rows: must be a whole number from 1 to 1000"
    ])
    expect(messages(await decode({ sample_rows: 5 }, WITH_SAMPLE))).toEqual([
      "exports[0].sample_rows: applies to mode: sample only, but this export's mode is full"
    ])
    expect(messages(await decode({ mode: "sample", sample_rows: 5 }))).toEqual([
      "exports[0].sample_rows: unknown key 'sample_rows'",
      'exports[0].mode: expected "full" or "incremental" or "chunked" or "keyset" or "time_window" or "cdc", actual "sample"'
    ])
    expect(messages(await decode({ mode: "full", sample_rows: 5 }))).toEqual(["exports[0].sample_rows: unknown key 'sample_rows'"])
  })

  it("is in the JSON Schema: a value of mode:, its keys documented and allowed with it only", async () => {
    const plugins = await Effect.runPromise(Effect.provide(loadAllPlugins([], process.cwd(), [source as never]), NodeFileSystem.layer))
    const schemaWith = configJsonSchema(plugins, WITH_SAMPLE)
    const exportSchema = (schemaWith["definitions"] as Record<string, Record<string, unknown>>)["export"]!
    const properties = exportSchema["allOf"] as ReadonlyArray<Record<string, unknown>>
    expect(JSON.stringify(properties)).toContain('"sample_rows"')
    const validate = new Ajv({ allErrors: true, strictRequired: false }).compile(schemaWith)
    expect(validate(configOf({ mode: "sample", sample_rows: 5 }))).toBe(true)
    expect(validate(configOf({ mode: "sample" }))).toBe(false)
    expect(validate(configOf({ mode: "full", sample_rows: 5 }))).toBe(false)
    const without = new Ajv({ allErrors: true, strictRequired: false }).compile(configJsonSchema(plugins, MODES))
    expect(without(configOf({ mode: "sample", sample_rows: 5 }))).toBe(false)
  })

  it("lints, plans and runs from that one definition", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-sample-mode-"))
    dirs.push(dir)
    const decoded = await decode({ mode: "sample", sample_rows: 600 }, WITH_SAMPLE, dir)
    if (Either.isLeft(decoded)) throw new Error(messages(decoded).join("\n"))
    const config = decoded.right
    expect(lintConfig(config).map((finding) => `${finding.path}: ${finding.message}`)).toContain(
      "exports[0].sample_rows: a sample of more than 500 rows"
    )

    const planned = await Effect.runPromise(
      planConfig(config, { path: "(test)", sha256: "0" }, { state: sqliteStateLayer(":memory:") }).pipe(
        Effect.provide(NodeFileSystem.layer)
      )
    )
    expect(planned.file?.exports[0]).toMatchObject({ mode: "sample", statements: ["ids order by id limit 600"] })

    const small = await decode({ mode: "sample", sample_rows: 7 }, WITH_SAMPLE, dir)
    if (Either.isLeft(small)) throw new Error(messages(small).join("\n"))
    const [run] = await Effect.runPromise(
      runConfig(small.right, { state: sqliteStateLayer(":memory:") }).pipe(Effect.provide(silentProgress))
    )
    if (run?._tag !== "success") throw new Error(`the run failed: ${run?.error.message}`)
    expect(run.result.rows).toBe(7)
    const out = path.join(dir, "out")
    const lines = readManifest(out).parts.flatMap((part) => fs.readFileSync(path.join(out, part.path), "utf8").trim().split("\n").slice(1))
    expect(lines).toEqual(["1", "2", "3", "4", "5", "6", "7"])
  })
})
