#!/usr/bin/env node
/**
 * Where the CPU time of a run went, from V8 CPU profiles (`node --cpu-prof`): self time aggregated by function and
 * source module (top 25), then by package / Rivet directory, and the garbage-collection share. Used by
 * bench/profile.sh; works on any .cpuprofile.
 *
 *   node bench/cpuprofile-summary.mjs FILE.cpuprofile… | DIR     (a directory: every .cpuprofile in it, summed —
 *                                                                  one per thread, e.g. the lanes' workers)
 *
 * The CLI is bundled (dist/bundle/*.js), so a profile names bundle chunks, not packages. esbuild starts each
 * module's code in a chunk with a `// path/of/module.js` comment line; a frame is attributed to the last such
 * comment above its line, which gives back e.g. node_modules/hyparquet-writer/src/… or dist/plugins/formats/… (built from
 * src/plugins/formats/…).
 */
import console from "node:console"
import { readdirSync, readFileSync, statSync } from "node:fs"
import * as path from "node:path"
import process from "node:process"
import { fileURLToPath } from "node:url"

const TOP = 25
const root = path.resolve(import.meta.dirname, "..")

const args = process.argv.slice(2)
if (args.length === 0) {
  console.error("usage: node bench/cpuprofile-summary.mjs FILE.cpuprofile… | DIR")
  process.exit(2)
}
const files = args.flatMap((arg) =>
  statSync(arg).isDirectory()
    ? readdirSync(arg)
        .filter((name) => name.endsWith(".cpuprofile"))
        .map((name) => path.join(arg, name))
    : [arg]
)
if (files.length === 0) {
  console.error(`no .cpuprofile files in ${args.join(" ")}`)
  process.exit(1)
}

// Bundle chunk → sorted [line, module] of its module-start comments.
const moduleStarts = new Map()
const startsOf = (file) => {
  let starts = moduleStarts.get(file)
  if (starts === undefined) {
    starts = []
    let text = ""
    try {
      text = readFileSync(file, "utf8")
    } catch {
      // The bundle was rebuilt or removed since the profile was taken: frames keep the chunk's name.
    }
    text.split("\n").forEach((line, index) => {
      const match = /^\/\/ ((?:node_modules|dist|src)\/\S+\.[cm]?[jt]s)$/.exec(line)
      if (match) starts.push([index, match[1]])
    })
    moduleStarts.set(file, starts)
  }
  return starts
}

// A frame's source module, relative to the repository where possible; "" for V8 builtins and native code.
const moduleOf = (url, line) => {
  if (url === "") return ""
  if (!url.startsWith("file:")) return url
  const file = fileURLToPath(url)
  const relative = path.relative(root, file)
  if (relative.startsWith(`dist${path.sep}bundle${path.sep}`)) {
    const starts = startsOf(file)
    let low = 0
    let high = starts.length - 1
    let found
    while (low <= high) {
      const middle = (low + high) >> 1
      if (starts[middle][0] <= line) {
        found = starts[middle][1]
        low = middle + 1
      } else high = middle - 1
    }
    return found === undefined ? relative : sourceOf(found)
  }
  return relative.startsWith("..") ? file : sourceOf(relative)
}

// dist/plugins/formats/parquet/columns.js → src/plugins/formats/parquet/columns.ts, where that file exists (tsc keeps the layout).
const sourceOf = (module) => {
  const match = /^dist\/(.+)\.js$/.exec(module)
  if (match === null || match[1].startsWith("bundle/")) return module
  const source = `src/${match[1]}.ts`
  try {
    statSync(path.join(root, source))
    return source
  } catch {
    return module
  }
}

// node_modules/@scope/pkg/… → @scope/pkg; dist/plugins/formats/parquet/x.js → rivet src/plugins/formats/parquet; node:… → node.
const areaOf = (module, name) => {
  if (module === "") return name.startsWith("(") ? name : "V8 builtins / native"
  const packages = module.split("node_modules/")
  if (packages.length > 1) {
    const parts = packages.at(-1).split("/")
    return parts[0].startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0]
  }
  if (module.startsWith("node:")) return "Node.js internals"
  if (module.startsWith("wasm:")) return "WebAssembly (e.g. the zstd codec)"
  if (module.startsWith("dist/bundle/")) return "bundle chunks, no module (esbuild glue)"
  const own = /^(?:dist|src)\/(.+)\/[^/]+$/.exec(module)
  if (own) return `rivet src/${own[1]}`
  return module
}

const selfByFunction = new Map()
const selfByArea = new Map()
let total = 0
const add = (map, key, micros, make) => {
  const entry = map.get(key) ?? make()
  entry.micros += micros
  map.set(key, entry)
}

for (const file of files) {
  const profile = JSON.parse(readFileSync(file, "utf8"))
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const { samples, timeDeltas } = profile
  // Sample i lasts until sample i + 1 (the next delta); the last one gets the profile's end.
  const lastEnd = profile.endTime - profile.startTime - timeDeltas.reduce((sum, delta) => sum + delta, 0)
  samples.forEach((id, index) => {
    const micros = index + 1 < samples.length ? timeDeltas[index + 1] : Math.max(0, lastEnd)
    const { functionName, url, lineNumber } = nodes.get(id).callFrame
    const name = functionName === "" ? "(anonymous)" : functionName
    const module = moduleOf(url, lineNumber)
    total += micros
    add(selfByFunction, `${name}\u0000${module}`, micros, () => ({ name, module, micros: 0 }))
    add(selfByArea, areaOf(module, name), micros, () => ({ micros: 0 }))
  })
}

const ms = (micros) => (micros / 1000).toFixed(0)
const share = (micros) => `${((100 * micros) / total).toFixed(1)} %`
const idle = selfByArea.get("(idle)")?.micros ?? 0
const program = selfByArea.get("(program)")?.micros ?? 0
const gc = selfByArea.get("(garbage collector)")?.micros ?? 0
const busy = total - idle

console.log(
  `${files.length} profile${files.length === 1 ? "" : "s"}, ${(total / 1e6).toFixed(2)} s sampled, ` +
    `${(busy / 1e6).toFixed(2)} s not idle; garbage collection ${ms(gc)} ms = ${share(gc)} of all, ` +
    `${((100 * gc) / Math.max(busy, 1)).toFixed(1)} % of the non-idle time`
)
console.log(
  `(idle) ${share(idle)}: the thread waited — for PostgreSQL, the disk, another thread; ` +
    `(program) ${share(program)}: V8 and Node.js outside JavaScript (compiling, the event loop)`
)
console.log()
console.log(`| self % | self ms | function | module |`)
console.log(`|---|---|---|---|`)
for (const entry of [...selfByFunction.values()].sort((a, b) => b.micros - a.micros).slice(0, TOP)) {
  console.log(`| ${share(entry.micros)} | ${ms(entry.micros)} | ${entry.name} | ${entry.module || "—"} |`)
}
console.log()
console.log(`| self % | self ms | package / area |`)
console.log(`|---|---|---|`)
for (const [area, entry] of [...selfByArea.entries()].sort((a, b) => b[1].micros - a[1].micros)) {
  if (entry.micros / total < 0.002) continue
  console.log(`| ${share(entry.micros)} | ${ms(entry.micros)} | ${area} |`)
}
