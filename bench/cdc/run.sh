#!/usr/bin/env bash
# CDC candidates benchmark (bench/cdc/LOG.md has the results). Not part of `npm test`.
#
#   CDC_BENCH_URL=postgres://postgres@127.0.0.1:5499/postgres bash bench/cdc/run.sh
#
# CDC_BENCH_URL must reach a PostgreSQL >= 14 with wal_level=logical (and a free replication slot or two) where the
# script may create and drop the table cdc_bench, the publication cdc_bench_pub and slots named cdc_bench*: use a
# server of your own (the LOG's was a throw-away initdb on port 5499), never a shared one.
#
# Phases (CDC_PHASES, default "workload live replay"):
#   workload  bench/cdc/workload.sql: 2M changes (1 000 transactions of 1 000 rows, then one of 1M rows) behind the
#             slot cdc_bench_src; the target LSN goes to bench/.work/cdc-target
#   live      per repetition: pg_recvlogical --endpos to /dev/null (the baseline), then each candidate of
#             bench/cdc/consume.ts, each on a fresh copy of cdc_bench_src, under /usr/bin/time -v
#   replay    records the stream once (bench/.work/cdc-stream.bin), serves it with bench/cdc/replay-server.ts and
#             runs each candidate against it (client alone), with CDC_SINK=columns and touch, on Node 20 and, when
#             CDC_NODE22 names a Node 22 binary, Node 22
# CDC_REPEAT (3), CDC_CANDIDATES ("postgres-js pg-protocol pglr pgwire"), CDC_LAB (/tmp/cdc-lab: a directory where
# `npm install pg-logical-replication@2.5.0 pgwire@0.8.1 pg pg-protocol` was run).
# Every result is a JSON line in bench/.work/cdc-results.jsonl (with the phase, the repetition and /usr/bin/time's
# maximum RSS); the medians are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${CDC_BENCH_URL:?set CDC_BENCH_URL to a PostgreSQL with wal_level=logical that the benchmark may write to}"
export CDC_BENCH_URL
export CDC_LAB="${CDC_LAB:-/tmp/cdc-lab}"
REPEAT="${CDC_REPEAT:-3}"
CANDIDATES="${CDC_CANDIDATES:-postgres-js pg-protocol pglr pgwire}"
PHASES="${CDC_PHASES:-workload live replay}"
PORT="${CDC_REPLAY_PORT:-5498}"
WORK=bench/.work
RESULTS="$WORK/cdc-results.jsonl"
mkdir -p "$WORK"
PSQL=(psql -X -q -tA "$CDC_BENCH_URL")

npx esbuild bench/cdc/consume.ts --bundle --platform=node --format=esm --packages=external \
  --outfile="$WORK/cdc-consume.mjs" --log-level=warning
npx esbuild bench/cdc/replay-server.ts --bundle --platform=node --format=esm \
  --outfile="$WORK/cdc-replay.mjs" --log-level=warning

has() { [[ " $PHASES " == *" $1 "* ]]; }

if has workload; then
  echo "== workload (about a minute)"
  psql -X -q "$CDC_BENCH_URL" -f bench/cdc/workload.sql | sed -n 's/^target_lsn //p' > "$WORK/cdc-target"
fi
TARGET="$(cat "$WORK/cdc-target")"
echo "target LSN $TARGET"

copy_slot() { "${PSQL[@]}" -c "select 1 from pg_copy_logical_replication_slot('cdc_bench_src', '$1')" > /dev/null; }
drop_slot() {
  # The walsender may still be ending: wait until the slot is inactive.
  for _ in $(seq 50); do
    if [ "$("${PSQL[@]}" -c "select count(*) from pg_replication_slots where slot_name = '$1' and active")" = 0 ]; then
      "${PSQL[@]}" -c "select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = '$1'" > /dev/null
      return
    fi
    sleep 0.2
  done
  echo "slot $1 still active" >&2
}

# measure PHASE REP LABEL command…: runs it under /usr/bin/time -v, appends its JSON line (or one made from time's
# numbers for a command that prints none) with the phase, repetition and maximum RSS.
measure() {
  local phase=$1 rep=$2 label=$3
  shift 3
  local out err
  out="$(mktemp)"
  err="$(mktemp)"
  local start end
  start=$(date +%s.%N)
  /usr/bin/time -v "$@" > "$out" 2> "$err" || { echo "FAILED: $*" >&2; cat "$err" >&2; }
  end=$(date +%s.%N)
  local rss user sys
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$err")
  user=$(sed -n 's/.*User time (seconds): //p' "$err")
  sys=$(sed -n 's/.*System time (seconds): //p' "$err")
  local json
  json="$(grep '^{' "$out" | tail -1 || true)"
  [ -n "$json" ] || json="{\"candidate\":\"$label\",\"changes\":2000000,\"seconds\":$(echo "$end - $start" | bc)}"
  node -e '
    const [json, phase, rep, label, rss, user, sys] = process.argv.slice(1)
    const r = JSON.parse(json)
    if (r.changesPerSecond === undefined) r.changesPerSecond = Math.round(r.changes / r.seconds)
    Object.assign(r, { phase, rep: Number(rep), label, maxRssMB: Number((rss / 1024).toFixed(1)), cpuSeconds: Number((+user + +sys).toFixed(2)) })
    console.log(JSON.stringify(r))
  ' "$json" "$phase" "$rep" "$label" "$rss" "$user" "$sys" | tee -a "$RESULTS"
  rm -f "$out" "$err"
}

if has live; then
  echo "== live: the real walsender, ${REPEAT}×"
  for rep in $(seq "$REPEAT"); do
    copy_slot cdc_bench_run
    measure live "$rep" pg_recvlogical pg_recvlogical -d "$CDC_BENCH_URL" --slot cdc_bench_run --start --endpos "$TARGET" \
      --no-loop -o proto_version=1 -o publication_names=cdc_bench_pub -o binary=true -f /dev/null
    drop_slot cdc_bench_run
    for candidate in $CANDIDATES; do
      copy_slot cdc_bench_run
      measure live "$rep" "$candidate" node "$WORK/cdc-consume.mjs" "$candidate" cdc_bench_run "$TARGET"
      drop_slot cdc_bench_run
    done
  done
fi

if has replay; then
  if [ ! -s "$WORK/cdc-stream.bin" ]; then
    echo "== recording the stream"
    copy_slot cdc_bench_rec
    CDC_RECORD="$WORK/cdc-stream.bin" node "$WORK/cdc-consume.mjs" postgres-js cdc_bench_rec "$TARGET" > /dev/null
    drop_slot cdc_bench_rec
  fi
  node "$WORK/cdc-replay.mjs" "$WORK/cdc-stream.bin" "$PORT" 2> /dev/null &
  REPLAY_PID=$!
  trap 'kill $REPLAY_PID 2> /dev/null || true' EXIT
  sleep 1
  export CDC_REPLICATION_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
  NODES=(node)
  [ -n "${CDC_NODE22:-}" ] && NODES+=("$CDC_NODE22")
  echo "== replay: clients alone, ${REPEAT}×"
  for rep in $(seq "$REPEAT"); do
    for nodebin in "${NODES[@]}"; do
      CDC_RAW=1 measure replay "$rep" transport "$nodebin" "$WORK/cdc-consume.mjs" postgres-js replay "$TARGET"
      for sink in columns touch; do
        for candidate in $CANDIDATES; do
          CDC_SINK=$sink measure replay "$rep" "$candidate" "$nodebin" "$WORK/cdc-consume.mjs" "$candidate" replay "$TARGET"
        done
      done
    done
  done
fi

echo "== medians (changes/s, max RSS MB, CPU s) by phase, node, candidate, sink"
node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse)
  const groups = new Map()
  for (const r of lines) {
    const key = [r.phase, r.node ?? "-", r.label, r.sink ?? "-"].join("  ")
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
  for (const [key, rs] of groups) {
    console.log(`${key.padEnd(44)} n=${rs.length}  ${String(median(rs.map((r) => r.changesPerSecond))).padStart(7)}/s  rss ${median(rs.map((r) => r.maxRssMB))} MB  cpu ${median(rs.map((r) => r.cpuSeconds))} s  (${rs.map((r) => r.changesPerSecond).join(", ")})`)
  }
' "$RESULTS"
