/**
 * `rivet plugin init --kind sink`: the folder sink of docs/plugin-authoring.md (files renamed into place when
 * complete) and its conformance test. For `type: folder` the files are test/testing/folder-sink-guide.test.ts's.
 * The generated package uses node:fs: it has Rivet and Effect as its only peers, not @effect/platform.
 */

/** The spellings of the plugin type in identifiers: `my-store` → `MyStore`, `myStore`. */
export const identifiersOf = (type: string) => {
  const pascal = type
    .split(/[-_]/)
    .filter(Boolean)
    .map((word) => `${word[0]!.toUpperCase()}${word.slice(1)}`)
    .join("")
  return { type, pascal, camel: `${pascal[0]!.toLowerCase()}${pascal.slice(1)}` }
}

export const sinkSources = (type: string): ReadonlyArray<readonly [string, string]> => {
  const names = identifiersOf(type)
  return [
    ["src/config.ts", `import * as Schema from "effect/Schema"

/** The keys of \`destination:\` besides \`type\`. Descriptions show up in \`rivet schema\` and editor completion. */
export const ${names.pascal}Config = Schema.Struct({
  root: Schema.String.annotations({ description: "Directory the objects go under (relative to the config file); it must exist." }),
  block_size: Schema.optionalWith(
    Schema.Int.pipe(Schema.between(64 * 1024, 64 * 1024 * 1024)).annotations({ description: "Bytes per block (default 1 MiB)." }),
    { default: () => 1024 * 1024 }
  )
})
export type ${names.pascal}Config = typeof ${names.pascal}Config.Type
`],
    ["src/errors.ts", `import { SinkError, type SinkErrorReason } from "rivet-export/plugin"

const byCode: Record<string, { reason: SinkErrorReason; retryable: boolean; hint?: string }> = {
  ENOENT: { reason: "NotFound", retryable: false, hint: "the folder must already exist" },
  EACCES: { reason: "PermissionDenied", retryable: false, hint: "the user running rivet needs write access to the folder" },
  EPERM: { reason: "PermissionDenied", retryable: false },
  EBUSY: { reason: "Unavailable", retryable: true },
  EMFILE: { reason: "Unavailable", retryable: true }
}

/** Maps a failed file-system call to a SinkError; \`retryable\` tells Rivet's runtime whether trying again can help. */
export const ${names.camel}Error = (operation: string, key: string | undefined) => (cause: unknown) => {
  const code = (cause as { code?: string }).code ?? ""
  const known = byCode[code] ?? { reason: "Unknown" as const, retryable: false }
  return new SinkError({
    plugin: ${JSON.stringify(names.type)},
    operation,
    ...(key === undefined ? {} : { key }),
    reason: known.reason,
    retryable: known.retryable,
    message: \`\${operation}\${key === undefined ? "" : \` \${key}\`} failed: \${cause instanceof Error ? cause.message : String(cause)}\`,
    ...(known.hint === undefined ? {} : { hint: known.hint }),
    cause
  })
}
`],
    ["src/driver.ts", `import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import { Sink, type SinkDriverShape } from "rivet-export/plugin"
import type { ${names.pascal}Config } from "./config.js"
import { ${names.camel}Error } from "./errors.js"

export const make${names.pascal}Driver = (config: ${names.pascal}Config, configDir: string): SinkDriverShape => {
  const root = path.resolve(configDir, config.root)
  // Every SDK (here: fs) call goes through this: a rejected promise becomes a SinkError, never a throw.
  const attempt = <A>(operation: string, key: string | undefined, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: ${names.camel}Error(operation, key) })
  // Bytes go to a dot-temp file beside the target and are renamed into place: nothing is half-visible.
  const prepare = async (key: string) => {
    const temp = path.join(root, path.dirname(key), \`.\${path.basename(key)}.\${randomUUID()}.tmp\`)
    await fs.mkdir(path.dirname(temp), { recursive: true })
    return temp
  }

  return Sink.make({
    spanPrefix: "${names.pascal}Sink",
    label: \`${names.pascal}(\${config.root})\`,
    uri: (key) => \`file://\${path.join(root, key ?? "")}\${key === undefined ? "/" : ""}\`,
    capabilities: { markers: true, blockSize: config.block_size, concurrency: 4 },
    usageError: Sink.usageErrors(${JSON.stringify(names.type)}),
    // The folder must exist (NotFound otherwise); the framework then writes and removes its probe file.
    check: attempt("check", undefined, () => fs.stat(root)),
    probe: { remove: (key) => attempt("check", key, () => fs.rm(path.join(root, key), { force: true })) },
    put: (key, bytes) =>
      attempt("put", key, async () => {
        const temp = await prepare(key)
        await fs.writeFile(temp, bytes, { flag: "wx" })
        await fs.rename(temp, path.join(root, key))
      }),
    begin: (key) =>
      attempt("begin", key, async () => {
        const temp = await prepare(key)
        const file = await fs.open(temp, "wx")
        return {
          // Positional writes make a retried block harmless and let blocks arrive in any order.
          writePart: (index: number, bytes: Uint8Array) =>
            attempt("writeBlock", key, () => file.write(bytes, 0, bytes.length, index * config.block_size)),
          complete: () =>
            attempt("complete", key, async () => {
              // A retried complete (the rename failed) finds the file already flushed and closed: fd is then -1.
              if (file.fd !== -1) await file.sync().then(() => file.close())
              await fs.rename(temp, path.join(root, key))
            }),
          abort: attempt("abort", key, async () => {
            await file.close().catch(() => undefined)
            await fs.rm(temp, { force: true })
          })
        }
      })
  })
}
`],
    ["src/index.ts", `import * as Layer from "effect/Layer"
import { defineSink, SinkDriver } from "rivet-export/plugin"
import { ${names.pascal}Config } from "./config.js"
import { make${names.pascal}Driver } from "./driver.js"

export default defineSink({
  type: ${JSON.stringify(names.type)},
  apiVersion: 1,
  description: "Files in a folder, renamed into place when complete",
  config: ${names.pascal}Config,
  make: (config, context) => Layer.succeed(SinkDriver, make${names.pascal}Driver(config, context.configDir))
})
`]
  ]
}

export const sinkTest = (type: string) => `import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { runSinkConformance } from "rivet-export/testing"
import { afterAll, describe, it } from "vitest"
import plugin from "../src/index.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-sink-${type}-"))
const layerFor = (dir: string) =>
  plugin.make(Effect.runSync(Schema.decodeUnknown(plugin.config)({ root: dir, block_size: 64 * 1024 })), {
    configDir: process.cwd(),
    env: {}
  })

const walk = (dir: string, prefix = ""): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(path.join(dir, entry.name), \`\${prefix}\${entry.name}/\`) : [\`\${prefix}\${entry.name}\`]
  )

afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

runSinkConformance("${type} sink conformance", {
  makeLayer: () => layerFor(root),
  readBack: async (key) => (fs.existsSync(path.join(root, key)) ? new Uint8Array(fs.readFileSync(path.join(root, key))) : undefined),
  listKeys: async () => walk(root),
  missingDestinationLayer: () => layerFor(path.join(root, "does-not-exist")),
  blockCount: 4
}, { describe, it })
`
