#!/usr/bin/env bash
# Where Rivet's CPU time goes: runs the CLI under `node --cpu-prof` on a slice of a table (a query export,
# `select * from TABLE limit ROWS`) and prints the top self-time functions, the time per package and the GC share
# (bench/cpuprofile-summary.mjs). The profiles stay in bench/.work/profile-FORMAT-TABLE-ROWS/ for Chrome DevTools.
# Usage: bash bench/profile.sh FORMAT [TABLE] [ROWS]     FORMAT: parquet, csv or ndjson; TABLE default bench_2m
#                                                         (made by bench/run.sh), ROWS default 200000
#        RIVET_BENCH_PG_URL=…  as for bench/run.sh (default 127.0.0.1:5432/test)
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
FORMAT=${1:-}
TABLE=${2:-bench_2m}
ROWS=${3:-200000}
usage() { echo "usage: bash bench/profile.sh FORMAT [TABLE] [ROWS]  (FORMAT: parquet, csv or ndjson) — $1" >&2; exit 1; }
[[ $FORMAT =~ ^(parquet|csv|ndjson)$ ]] || usage "unknown format '${FORMAT}'"
[[ $TABLE =~ ^[A-Za-z_][A-Za-z0-9_.]*$ ]] || usage "TABLE must be a plain (optionally schema-qualified) name, got '$TABLE'"
[[ $ROWS =~ ^[1-9][0-9]*$ ]] || usage "ROWS must be a positive integer, got '$ROWS'"
psql "$PG_URL" -XtAc "select '$TABLE'::regclass" >/dev/null 2>&1 ||
  usage "no table $TABLE at $PG_URL (bench/run.sh creates bench_2m, bench_narrow_10m and bench_text_2m)"
[ -f dist/bundle/main.js ] || npm run build >/dev/null

WORK=bench/.work/profile-$FORMAT-$TABLE-$ROWS
rm -rf "$WORK"
mkdir -p "$WORK"
cat >"$WORK/config.yaml" <<YAML
source: { type: postgres, url: "$PG_URL", statement_timeout_s: 0 }
exports:
  - name: profile
    query: "select * from $TABLE limit $ROWS"
    format: $FORMAT
    destination: { type: local, path: out }
YAML
echo "profiling rivet → $FORMAT of $ROWS rows of $TABLE…" >&2
/usr/bin/time -f "wall %e s, CPU %U + %S s, peak RSS %M KB" \
  node --cpu-prof --cpu-prof-dir="$WORK" bin/rivet.js run -c "$WORK/config.yaml" >"$WORK/run.out" 2>"$WORK/run.err" ||
  { cat "$WORK/run.err" >&2; exit 1; }
rm -rf "$WORK/out"
grep -E '^ *rows:' "$WORK/run.err" | sed 's/^ */rows exported: /; s/rows: *//' || true
tail -n 1 "$WORK/run.err"
node bench/cpuprofile-summary.mjs "$WORK"
echo
echo "profiles: $WORK/*.cpuprofile (open in Chrome DevTools → Performance, or VS Code)"
