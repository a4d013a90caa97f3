#!/usr/bin/env bash
# Rivet vs `psql \copy` on the same table, in the same run: wall time ratios and peak RSS.
# Usage: bash bench/run.sh            (needs PostgreSQL at RIVET_BENCH_PG_URL, default 127.0.0.1:5432/test)
# Prints a Markdown table; docs/benchmarks.md records its output with this command.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
WORK=bench/.work
mkdir -p "$WORK"
[ -f dist/bundle/main.js ] || npm run build >/dev/null

# shellcheck source=bench/lib.sh
source bench/lib.sh

config() { # table format → path of a config exporting the table
  local file="$WORK/$1-$2.yaml"
  rm -rf "$WORK/out-$1-$2"
  cat >"$file" <<YAML
source: { type: postgres, url: "$PG_URL" }
exports:
  - name: $1
    table: $1
    format: $2
    destination: { type: local, path: out-$1-$2 }
YAML
  echo "$file"
}

ensure_table bench_2m 2000000
ensure_table bench_4m 4000000

read -r copy_s copy_rss < <(measure copy psql "$PG_URL" -c "\\copy (select * from bench_2m) to '$WORK/copy.csv' csv header")
read -r parquet_s parquet_rss < <(measure parquet node bin/rivet.js run -c "$(config bench_2m parquet)")
read -r csv_s csv_rss < <(measure csv node bin/rivet.js run -c "$(config bench_2m csv)")
read -r parquet4_s parquet4_rss < <(measure parquet4 node bin/rivet.js run -c "$(config bench_4m parquet)")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cat <<TABLE
| run (2M rows × 20 columns unless noted) | wall s | vs \\copy | peak RSS MB | target |
|---|---|---|---|---|
| psql \\copy … csv header | $copy_s | 1.00 | $copy_rss | baseline |
| rivet → Parquet (zstd) | $parquet_s | $(ratio "$parquet_s" "$copy_s") | $parquet_rss | ≤ 2.0×, ≤ 150 MB |
| rivet → CSV | $csv_s | $(ratio "$csv_s" "$copy_s") | $csv_rss | ≤ 1.3×, ≤ 150 MB |
| rivet → Parquet, 4M rows | $parquet4_s | — | $parquet4_rss | RSS within 15 % of 2M ($(ratio "$parquet4_rss" "$parquet_rss")×) |
TABLE
