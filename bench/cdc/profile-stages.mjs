#!/usr/bin/env node
/**
 * The reading thread's CPU time in a `mode: cdc` run by stage, from its V8 CPU profile (`CDC_PROFILE=1 bash
 * bench/cdc/mode-cdc.sh` keeps them in bench/.work/cdc-mode/profile-…/; the main thread's is the `.0.001` file, the
 * encoder thread's the other). Each busy sample goes to the first stage (in the order below) one of whose functions
 * is on its stack, so nothing is counted twice. bench/cpuprofile-summary.mjs gives the self-time view.
 *
 *   node bench/cdc/profile-stages.mjs FILE.cpuprofile
 */
import console from "node:console"
import { readFileSync } from "node:fs"
import * as path from "node:path"
import process from "node:process"
import { fileURLToPath } from "node:url"

const root = path.resolve(import.meta.dirname, "../..")
const [file] = process.argv.slice(2)
if (file === undefined) {
  console.error("usage: node bench/cdc/profile-stages.mjs FILE.cpuprofile")
  process.exit(2)
}

// A bundled frame's module: the last `// dist/…` (or node_modules) comment esbuild put above its line.
const moduleStarts = new Map()
const moduleOf = (url, line) => {
  if (!url.startsWith("file:")) return url
  const chunk = fileURLToPath(url)
  const relative = path.relative(root, chunk)
  if (!relative.startsWith(`dist${path.sep}bundle${path.sep}`)) return relative
  let starts = moduleStarts.get(chunk)
  if (starts === undefined) {
    starts = []
    readFileSync(chunk, "utf8")
      .split("\n")
      .forEach((text, index) => {
        const match = /^\/\/ ((?:node_modules|dist|src)\/\S+\.[cm]?[jt]s)$/.exec(text)
        if (match) starts.push([index, match[1]])
      })
    moduleStarts.set(chunk, starts)
  }
  let found = relative
  for (const [start, module] of starts) {
    if (start > line) break
    found = module
  }
  return found
}

const named = (...names) => (frame) => names.includes(frame.functionName)
const inModule = (name, module) => (frame) => frame.functionName === name && moduleOf(frame.url, frame.lineNumber).includes(module)
const STAGES = [
  ["garbage collection", [named("(garbage collector)")]],
  ["pgoutput decoding into column builders (PgoutputDecoder.message)", [inModule("message", "cdc/pgoutput.js")]],
  ["socket reads, postgres.js framing, Readable push (onStreamRead)", [named("onStreamRead")]],
  ["reader plumbing: ChangeReader.pump / next, Messages.next", [inModule("pump", "cdc/change-reader.js"), inModule("next", "cdc/change-reader.js")]],
  ["Effect runtime: the pipeline, batches to the encoder thread, publishing", [named("evaluateEffect", "runLoop", "postMessage")]],
  ["other promise jobs (runMicrotasks)", [named("runMicrotasks")]],
  ["module loading", [(frame) => /compile|loadAndTranslate|translate|module_job|realm/.test(frame.functionName + frame.url)]]
]

const profile = JSON.parse(readFileSync(file, "utf8"))
const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
const sums = new Map([...STAGES.map(([name]) => [name, 0]), ["other", 0]])
let busy = 0
let all = 0
profile.samples.forEach((id, index) => {
  const micros = profile.timeDeltas[index + 1] ?? 0
  all += micros
  if (nodes.get(id).callFrame.functionName === "(idle)") return
  busy += micros
  const frames = []
  for (let at = id; at !== undefined; at = parent.get(at)) frames.push(nodes.get(at).callFrame)
  const stage = STAGES.find(([, tests]) => frames.some((frame) => tests.some((test) => test(frame))))
  const name = stage === undefined ? "other" : stage[0]
  sums.set(name, sums.get(name) + micros)
})
console.log(`${(all / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy`)
console.log("| stage | ms | share of busy |\n|---|---|---|")
for (const [name, micros] of sums) console.log(`| ${name} | ${(micros / 1000).toFixed(0)} | ${((100 * micros) / busy).toFixed(1)} % |`)
