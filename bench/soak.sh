#!/usr/bin/env bash
# Issue #7, crash soak: N trials (default 50) of a checkpointed chunked export (parallel: 2, Parquet/CSV alternating)
# SIGKILLed at random moments and resumed until it exits 0, each trial checked for lost or duplicated rows, temp
# files, partial files under final names and state/manifest mismatches (test/e2e/soak.ts). Prints the tally.
# Usage: bash bench/soak.sh [N]        PostgreSQL as for `npm test` (127.0.0.1:5432/test or RIVET_TEST_PG_URL)
#        RIVET_SOAK_SEED=<seed> bash bench/soak.sh 5     replays the kill schedule of an earlier seed
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-50}
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash bench/soak.sh [N]  (N: number of trials, default 50)" >&2; exit 1; }
[ -f dist/bundle/main.js ] || npm run build >/dev/null

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rivet-bench-soak.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

started=$(date +%s)
set +e
RIVET_SOAK_N=$N RIVET_SOAK_TALLY="$WORK/tally.json" npx vitest run test/e2e/crash-soak.test.ts 2>&1 \
  | tee "$WORK/vitest.log" | grep --line-buffered -E '^(soak:|trial )' >&2
status=${PIPESTATUS[0]}
set -e
wall=$(($(date +%s) - started))

if [ ! -f "$WORK/tally.json" ]; then
  cat "$WORK/vitest.log" >&2
  echo "the soak did not produce a tally (vitest exited $status)" >&2
  exit 1
fi

node - "$WORK/tally.json" "$wall" <<'JS'
const fs = require("node:fs")
const [file, wall] = process.argv.slice(2)
const t = JSON.parse(fs.readFileSync(file, "utf8"))
const phases = Object.entries(t.killPhases).sort(([, a], [, b]) => b - a).map(([phase, n]) => `${phase} ${n}`).join(", ")
const rows = [
  ["trials", `${t.trials} (${t.parquetTrials} Parquet, ${t.csvTrials} CSV), ${t.trialsKilled} killed at least once`],
  ["kills delivered", `${t.killsDelivered} of ${t.killsPlanned} planned; ${t.killsMissed} came after the run had finished (no kill), ` +
    `${t.killsPlanned - t.killsDelivered - t.killsMissed} lapsed with the trial`],
  ["kills landed", phases || "—"],
  ["resumes", t.resumes],
  ["rows lost", t.rowsLost],
  ["duplicate rows", t.duplicateRows],
  ["temp files left", t.tempFilesLeft],
  ["partial finals", t.partialFinals],
  ["state mismatches", t.stateMismatches],
  ["untracked files", `${t.untrackedFiles} (reported as untracked:, ${t.untrackedMisreported} misreported)`],
  ["unexpected exits", t.unexpectedExits],
  ["typical run", `${Math.round(t.calibrationMs.parquet)} ms Parquet, ${Math.round(t.calibrationMs.csv)} ms CSV`],
  ["seed", t.seed],
  ["wall time", `${wall} s`]
]
console.log("| crash soak | |\n|---|---|")
for (const [label, value] of rows) console.log(`| ${label} | ${value} |`)
for (const p of t.problems) console.log(`problem: trial ${p.trial} (seed ${p.trialSeed}, ${p.format}): ${p.problem}`)
JS
exit "$status"
