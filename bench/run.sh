#!/usr/bin/env bash
# Rivet vs `psql \copy` on three table shapes, in one run (issue #14): for each shape the `\copy … csv header`
# baseline, the `\copy` + DuckDB CSV → Parquet zstd pipeline, and rivet → Parquet (zstd) / CSV / NDJSON; wall time
# as a ratio to the same table's `\copy` in the same run, CPU time, peak RSS, the targets marked met or missed.
# Usage: bash bench/run.sh     (PostgreSQL at RIVET_BENCH_PG_URL, default 127.0.0.1:5432/test; ~10 minutes)
#   BENCH_SHAPES="wide narrow text"     shapes to run, default all three (see the tables below)
#   BENCH_FORMATS="parquet csv ndjson"  Rivet formats to run, default all three
#   BENCH_DUCKDB=0                      skip the \copy + DuckDB pipeline
#   BENCH_4M=0                          skip the bench_4m Parquet run (memory flat with table size; wide + parquet)
#   BENCH_REPEAT=N                      run each measurement N times and report the median of each number
#   BENCH_ROWS=N                        every shape at N rows (tables bench_rN, bench_narrow_rN, bench_text_rN;
#                                       the 4M run on bench_r2N), for a quick check of the script itself
# e.g. BENCH_SHAPES=narrow BENCH_FORMATS=csv BENCH_DUCKDB=0 BENCH_REPEAT=3 bash bench/run.sh
# Prints one Markdown table per shape; bench/LOG.md records each run with its command, docs/benchmarks.md the latest.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
SHAPES=${BENCH_SHAPES:-wide narrow text}
FORMATS=${BENCH_FORMATS:-parquet csv ndjson}
DUCKDB=${BENCH_DUCKDB:-1}
SCALE_RUN=${BENCH_4M:-1}
REPEAT=${BENCH_REPEAT:-1}
ROWS=${BENCH_ROWS:-}
WORK=bench/.work
mkdir -p "$WORK"
rm -f "$WORK/run.failed"

usage() { echo "bench/run.sh: $1 (see the header of bench/run.sh)" >&2; exit 1; }
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || usage "BENCH_REPEAT must be a positive integer, got '$REPEAT'"
[[ -z $ROWS || $ROWS =~ ^[1-9][0-9]*$ ]] || usage "BENCH_ROWS must be a positive integer, got '$ROWS'"
for shape in $SHAPES; do [[ $shape =~ ^(wide|narrow|text)$ ]] || usage "unknown shape '$shape' in BENCH_SHAPES (wide, narrow, text)"; done
for format in $FORMATS; do [[ $format =~ ^(parquet|csv|ndjson)$ ]] || usage "unknown format '$format' in BENCH_FORMATS (parquet, csv, ndjson)"; done
[ -n "$SHAPES" ] || usage "BENCH_SHAPES is empty"
if [ "$DUCKDB" != 0 ] && [ ! -d node_modules/@duckdb/node-api ]; then
  usage "the DuckDB pipeline needs the devDependency @duckdb/node-api: run npm install, or set BENCH_DUCKDB=0"
fi
[ -f dist/bundle/main.js ] || npm run build >/dev/null

# shellcheck source=bench/lib.sh
source bench/lib.sh

# Targets (issue #14), as ratios to `\copy` of the same table in the same run.
declare -A TIME_TARGET=([parquet]=1.75 [csv]=1.2 [ndjson]=2.0)
declare -A FORMAT_NAME=([parquet]="Parquet (zstd)" [csv]=CSV [ndjson]=NDJSON)
RSS_TARGET_MB=128
SCALE_RSS_TARGET=1.10

# shape → "table rows sql description"
shape_info() {
  local n
  case $1 in
    wide) n=${ROWS:-2000000}
      echo "$([ -z "$ROWS" ] && echo bench_2m || echo "bench_r$n") $n bench/make-table.sql $n rows × 20 mixed columns" ;;
    narrow) n=${ROWS:-10000000}
      echo "$([ -z "$ROWS" ] && echo bench_narrow_10m || echo "bench_narrow_r$n") $n bench/make-narrow.sql $n rows × 4 integer/timestamp columns" ;;
    text) n=${ROWS:-2000000}
      echo "$([ -z "$ROWS" ] && echo bench_text_2m || echo "bench_text_r$n") $n bench/make-text.sql $n rows: int8, 1–4 KiB text, jsonb" ;;
  esac
}

# No statement timeout: on a loaded machine an export of the big tables can run past the default 300 s.
config() { # table format → path of a config exporting the table (Parquet: zstd, the default)
  local file="$WORK/$1-$2.yaml"
  rm -rf "$WORK/out-$1-$2"
  cat >"$file" <<YAML
source: { type: postgres, url: "$PG_URL", statement_timeout_s: 0 }
exports:
  - name: $1
    table: $1
    format: $2
    destination: { type: local, path: out-$1-$2 }
YAML
  echo "$file"
}

check_rows() { # what expected actual
  [ "$3" = "$2" ] || echo "warning: $1 reported ${3:-no} rows, expected $2" >&2
}

# A measurement that failed (measure printed why) → "failed" in its fields, noted for the exit status.
failed() { # fields
  touch "$WORK/run.failed"
  printf 'failed%.0s ' $(seq 1 "$1"); echo
}

# One Rivet export → "wall_s rss_mb cpu_s"
rivet_once() { # table rows format
  local label="rivet-$1-$3" wall rss
  read -r wall rss < <(measure "$label" node bin/rivet.js run -c "$(config "$1" "$3")") || { rm -rf "$WORK/out-$1-$3"; failed 3; return; }
  # Rivet prints its run summary on stderr, which measure keeps in $label.time with time's report.
  check_rows "rivet → $3 of $1" "$2" "$(grep -oE '^ *rows: +[0-9,]+' "$WORK/$label.time" | tr -dc '0-9' || true)"
  rm -rf "$WORK/out-$1-$3"
  echo "$wall $rss $(cpu_seconds "$label")"
}

# `\copy` to CSV, then (unless BENCH_DUCKDB=0) DuckDB CSV → Parquet on that file →
# "copy_wall copy_rss copy_cpu duck_wall duck_rss duck_cpu pipeline_wall pipeline_rss pipeline_cpu"
copy_once() { # table rows
  local csv="$WORK/$1.csv" parquet="$WORK/$1-duckdb.parquet" cw cr dw=0 dr=0 dc=0
  read -r cw cr < <(measure "copy-$1" psql "$PG_URL" -X -c "\\copy (select * from $1) to '$csv' csv header") ||
    { rm -f "$csv"; failed 9; return; }
  check_rows "psql \\copy of $1" "$2" "$(grep -oE '^COPY [0-9]+' "$WORK/copy-$1.out" | tr -dc '0-9' || true)"
  if [ "$DUCKDB" != 0 ]; then
    if read -r dw dr < <(measure "duckdb-$1" node bench/duckdb-csv-to-parquet.mjs "$csv" "$parquet"); then
      check_rows "DuckDB CSV → Parquet of $1" "$2" "$(tr -dc '0-9' <"$WORK/duckdb-$1.out")"
      dc=$(cpu_seconds "duckdb-$1")
    else
      dw=failed dr=failed dc=failed
    fi
  fi
  rm -f "$csv" "$parquet"
  local cc; cc=$(cpu_seconds "copy-$1")
  if [ "$dw" = failed ]; then echo "$cw $cr $cc failed failed failed failed failed failed"; return; fi
  awk -v cw="$cw" -v cr="$cr" -v cc="$cc" -v dw="$dw" -v dr="$dr" -v dc="$dc" \
    'BEGIN { printf "%s %s %s %s %s %s %.2f %d %.2f\n", cw, cr, cc, dw, dr, dc, cw + dw, (cr + 0 > dr + 0 ? cr : dr), cc + dc }'
}

# Runs CMD… BENCH_REPEAT times; prints the median of each whitespace-separated field over the runs (for an odd
# count the middle run's value as printed, for an even count the mean of the middle two), "failed" if any failed.
repeated() {
  local i
  for i in $(seq 1 "$REPEAT"); do "$@"; done | awk '
    { for (f = 1; f <= NF; f++) v[f, NR] = $f; if (NF > nf) nf = NF }
    END {
      for (f = 1; f <= nf; f++) {
        bad = 0; for (r = 1; r <= NR; r++) { a[r] = v[f, r]; if (a[r] !~ /^[0-9.]+$/) bad = 1 }
        if (bad) { printf "%sfailed", (f > 1 ? " " : ""); continue }
        for (x = 2; x <= NR; x++) { t = a[x]; for (y = x - 1; y >= 1 && a[y] + 0 > t + 0; y--) a[y + 1] = a[y]; a[y + 1] = t }
        m = (NR % 2) ? a[(NR + 1) / 2] : sprintf("%.2f", (a[NR / 2] + a[NR / 2 + 1]) / 2)
        printf "%s%s", (f > 1 ? " " : ""), m
      }
      print ""
    }'
}

number() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
ratio() { if number "$1" && number "$2"; then awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; else echo "—"; fi; }
verdict() { # value limit → met / missed (value ≤ limit; a failed run misses)
  if number "$1"; then awk -v v="$1" -v l="$2" 'BEGIN { print (v + 0 <= l + 0) ? "met" : "missed" }'; else echo missed; fi
}

echo "bench/run.sh — $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bin || echo ' (+ uncommitted changes)'), node $(node --version), $(nproc) cores"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); BENCH_REPEAT=$REPEAT$([ "$REPEAT" = 1 ] || echo ' (each number is the median)')"

scale_table() { # the wide shape's table with twice the rows
  if [ -z "$ROWS" ]; then echo bench_4m; else echo "bench_r$((ROWS * 2))"; fi
}
scale_run() { [ "$1" = wide ] && [ "$SCALE_RUN" != 0 ] && [[ " $FORMATS " == *" parquet "* ]]; }

for shape in $SHAPES; do
  read -r table rows sql _ < <(shape_info "$shape")
  ensure_table "$table" "$rows" "$sql"
  if scale_run "$shape"; then ensure_table "$(scale_table)" $((rows * 2)); fi
done

for shape in $SHAPES; do
  read -r table rows _ description < <(shape_info "$shape")
  echo "running $shape ($table)…" >&2
  read -r copy_s copy_rss copy_cpu duck_s duck_rss duck_cpu pipe_s pipe_rss pipe_cpu < <(repeated copy_once "$table" "$rows")
  declare -A wall=() rss=() cpu=()
  for format in $FORMATS; do
    read -r "wall[$format]" "rss[$format]" "cpu[$format]" < <(repeated rivet_once "$table" "$rows" "$format")
  done

  echo
  echo "### $shape — $table: $description"
  echo
  echo "| run | wall s | vs \\copy | CPU s | peak RSS MB | time target | RSS target |"
  echo "|---|---|---|---|---|---|---|"
  echo "| psql \\copy … csv header | $copy_s | 1.00 | $copy_cpu | $copy_rss | baseline | — |"
  if [ "$DUCKDB" != 0 ]; then
    echo "| \\copy → CSV, then DuckDB CSV → Parquet zstd ($copy_s + $duck_s s; DuckDB's types) | $pipe_s | $(ratio "$pipe_s" "$copy_s") | $pipe_cpu | $pipe_rss (DuckDB $duck_rss) | reference | — |"
  fi
  for format in $FORMATS; do
    r=$(ratio "${wall[$format]}" "$copy_s")
    echo "| rivet → ${FORMAT_NAME[$format]} | ${wall[$format]} | $r | ${cpu[$format]} | ${rss[$format]} | ≤ ${TIME_TARGET[$format]}× $(verdict "$r" "${TIME_TARGET[$format]}") | ≤ $RSS_TARGET_MB MB $(verdict "${rss[$format]}" "$RSS_TARGET_MB") |"
  done
  if scale_run "$shape"; then
    big=$(scale_table)
    echo "running $big → Parquet…" >&2
    read -r big_s big_rss big_cpu < <(repeated rivet_once "$big" $((rows * 2)) parquet)
    growth=$(ratio "$big_rss" "${rss[parquet]}")
    echo "| rivet → Parquet (zstd), $big ($((rows * 2)) rows) | $big_s | — | $big_cpu | $big_rss | — | ≤ $RSS_TARGET_MB MB $(verdict "$big_rss" "$RSS_TARGET_MB"); ${growth}× the $rows-row run, ≤ ${SCALE_RSS_TARGET}× $(verdict "$growth" "$SCALE_RSS_TARGET") |"
  fi
  unset wall rss cpu
done

echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg). Ratios are to the \`\\copy\` of the same table in this run;"
echo "CPU s is user + system time of the process (for the DuckDB pipeline, psql's plus DuckDB's; PostgreSQL's own"
echo "backend is not counted). Peak RSS is /usr/bin/time's maximum resident set size (for the pipeline, the larger step's)."
if [ -e "$WORK/run.failed" ]; then
  echo
  echo "Some runs failed (\"failed\" above); their errors are on stderr."
  exit 1
fi
