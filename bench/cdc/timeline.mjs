#!/usr/bin/env node
/**
 * Who is busy when, during a bench/cdc/mode-cdc.sh run: samples /proc every INTERVAL ms (default 250) for the
 * processes whose command line matches the given patterns (default: `bin/rivet.js run`, `pg_recvlogical` and the
 * server's walsenders) and prints, per sample, each process group's CPU use since the last sample (in cores) and its
 * RSS, and how many processes matched. Linux only; run it as a user who may read the server processes' /proc/PID/stat (root, or the server's user).
 *
 *   node bench/cdc/timeline.mjs [SECONDS] > timeline.tsv &     then run the benchmark; it stops after SECONDS (600)
 *
 * Used for LOG.md's "where the time goes" (the 1M-row transaction: the walsender decodes it before the client gets
 * its first change).
 */
import console from "node:console"
import { readdirSync, readFileSync } from "node:fs"
import process from "node:process"
import { setTimeout as sleep } from "node:timers/promises"

const seconds = Number(process.argv[2] ?? 600)
const interval = Number(process.env["INTERVAL"] ?? 250)
const groups = [
  ["rivet", (cmd) => cmd.startsWith("node ") && cmd.includes("bin/rivet.js") && cmd.includes(" run ")],
  // Debian's pg_recvlogical is a Perl wrapper that execs /usr/lib/postgresql/<version>/bin/pg_recvlogical.
  ["recvlogical", (cmd) => /^\S*pg_recvlogical /.test(cmd)],
  ["walsender", (cmd) => cmd.startsWith("postgres: ") && cmd.includes("walsender")]
]
const ticks = 100 // CLK_TCK on Linux
const page = 4096

const sample = () => {
  const totals = new Map(groups.map(([name]) => [name, { cpu: new Map(), rss: 0 }]))
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    let cmd, stat
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, "latin1").replaceAll("\0", " ").trim()
      stat = readFileSync(`/proc/${entry}/stat`, "latin1")
    } catch {
      continue
    }
    const group = groups.find(([, match]) => match(cmd))
    if (group === undefined) continue
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const total = totals.get(group[0])
    total.cpu.set(entry, (Number(fields[11]) + Number(fields[12])) / ticks) // utime + stime
    total.rss += (Number(fields[21]) * page) / 2 ** 20
  }
  return totals
}

console.log(["t_s", ...groups.flatMap(([name]) => [`${name}_n`, `${name}_cores`, `${name}_rss_mb`])].join("\t"))
const started = Date.now()
let last = sample()
let lastAt = started
while (Date.now() - started < seconds * 1000) {
  await sleep(interval)
  const now = sample()
  const at = Date.now()
  const dt = (at - lastAt) / 1000
  const row = [((at - started) / 1000).toFixed(2)]
  let any = false
  for (const [name] of groups) {
    const a = now.get(name)
    const b = last.get(name)
    // By process: one that appeared since the last sample counts from 0; one that ended is not in `now`.
    let used = 0
    for (const [pid, cpu] of a.cpu) used += cpu - (b.cpu.get(pid) ?? 0)
    const cores = used / dt
    if (a.cpu.size > 0) any = true
    row.push(String(a.cpu.size), cores.toFixed(2), a.rss.toFixed(0))
  }
  if (any) console.log(row.join("\t"))
  last = now
  lastAt = at
}
