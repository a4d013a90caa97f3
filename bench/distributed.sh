#!/usr/bin/env bash
# Issue #19: one chunked export run by 1 worker process vs 2 worker processes (`rivet run --worker`, same machine),
# with the state in its own PostgreSQL database so the coordination it costs can be counted: transactions committed
# on the state database per chunk. Prints a Markdown table.
# Usage: bash bench/distributed.sh              (4M rows; PostgreSQL at RIVET_BENCH_PG_URL, default 127.0.0.1:5432/test)
#        ROWS=1000000 bash bench/distributed.sh   a quicker check on a smaller table
# Both runs use the same config, `parallel: 2`: the cap on chunk statements across all workers, so the second worker
# adds CPU for encoding, not load on the source. On one machine with two cores, expect little speedup; the number to
# watch is the overhead.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
ROWS=${ROWS:-4000000}
CHUNKS=${CHUNKS:-40}
TABLE="bench_narrow_r$ROWS"
STATE_DB=rivet_bench_state
[ -f dist/bundle/main.js ] || npm run build >/dev/null

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rivet-bench-distributed.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=bench/lib.sh
source bench/lib.sh
ensure_table "$TABLE" "$ROWS" bench/make-narrow.sql

psql "$PG_URL" -Xq -c "DROP DATABASE IF EXISTS $STATE_DB WITH (FORCE)" -c "CREATE DATABASE $STATE_DB"
STATE_URL=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$PG_URL" "$STATE_DB")
commits() { psql "$PG_URL" -XtAc "SELECT pg_stat_force_next_flush(); SELECT xact_commit FROM pg_stat_database WHERE datname = '$STATE_DB'" | tail -1; }

cat >"$WORK/export.yaml" <<YAML
source: { type: postgres, url: "$PG_URL" }
exports:
  - name: dist_bench
    table: $TABLE
    mode: chunked
    chunk_column: id
    chunk_size: $(( (ROWS + CHUNKS - 1) / CHUNKS ))
    parallel: 2
    format: parquet
    destination: { type: local, path: out }
YAML

run_workers() { # N RUN_ID → wall seconds for N workers joining one run
  local n=$1 id=$2 start end pids=() i
  rm -rf "$WORK/out"
  start=$(date +%s.%N)
  for i in $(seq "$n"); do
    RIVET_STATE_URL=$STATE_URL node bin/rivet.js run -c "$WORK/export.yaml" --worker --run-id "$id" >/dev/null 2>"$WORK/$id.$i.err" &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { echo "worker $((i + 1)) of run $id failed:" >&2; cat "$WORK/$id.$((i + 1)).err" >&2; exit 1; }
  done
  end=$(date +%s.%N)
  [ -f "$WORK/out/_SUCCESS" ] || { echo "run $id wrote no _SUCCESS" >&2; exit 1; }
  [ "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).row_count)' "$WORK/out/manifest.json")" = "$ROWS" ] ||
    { echo "run $id: the manifest does not list $ROWS rows" >&2; exit 1; }
  echo "$start $end" | awk '{ printf "%.2f\n", $2 - $1 }'
}

before=$(commits); one=$(run_workers 1 "bench-1-$$"); after_one=$(commits)
two=$(run_workers 2 "bench-2-$$"); after_two=$(commits)
per_unit() { echo "$1 $2" | awk -v c="$CHUNKS" '{ printf "%.1f\n", ($2 - $1) / c }'; }
echo "| workers | wall s | speedup | state transactions per chunk |"
echo "|---|---|---|---|"
echo "| 1 | $one | 1.00 | $(per_unit "$before" "$after_one") |"
echo "| 2 | $two | $(echo "$one $two" | awk '{ printf "%.2f", $1 / $2 }') | $(per_unit "$after_one" "$after_two") |"
echo "($ROWS rows, $CHUNKS chunks, parallel: 2, Parquet to a local directory; $(nproc) cores)"
psql "$PG_URL" -Xq -c "DROP DATABASE IF EXISTS $STATE_DB WITH (FORCE)"
