#!/usr/bin/env bash
# The cost of masking: the wide table's shape (bench/make-table.sql) → Parquet with three hmac_sha256 columns (name,
# email, note) against the same export unmasked, in turns, REPEAT times; prints CPU seconds, wall and peak RSS of each
# and the masked/unmasked ratios (medians). ROWS=500000 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
ROWS=${ROWS:-500000}
REPEAT=${REPEAT:-5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
source bench/lib.sh
TABLE=bench_mask_r$ROWS
ensure_table "$TABLE" "$ROWS"
npm run build >/dev/null
export BENCH_MASK_KEY=benchmark-masking-key-0123456789
for variant in plain masked; do
  {
    echo "source: { type: postgres, url: \"$PG_URL\" }"
    [ "$variant" = masked ] && echo "masking: { key_env: BENCH_MASK_KEY }"
    echo "exports:"
    echo "  - name: $variant"
    echo "    table: $TABLE"
    echo "    format: parquet"
    echo "    allow_unmasked: [email]"
    [ "$variant" = masked ] && printf '    columns:\n      name: { mask: hmac_sha256 }\n      email: { mask: hmac_sha256 }\n      note: { mask: hmac_sha256 }\n'
    echo "    destination: { type: local, path: out_$variant }"
  } >"$WORK/$variant.yaml"
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for i in $(seq 1 "$REPEAT"); do
  for variant in plain masked; do
    rm -rf "$WORK/out_$variant"
    read -r wall rss < <(measure "$variant-$i" node bin/rivet.js run -c "$WORK/$variant.yaml")
    echo "$variant $(cpu_seconds "$variant-$i") $wall $rss" >>"$WORK/results"
  done
done
for variant in plain masked; do
  printf '%-7s cpu %6.2f s  wall %6.2f s  peak %4.0f MB (medians of %d)\n' "$variant" \
    "$(awk -v v=$variant '$1 == v { print $2 }' "$WORK/results" | median)" \
    "$(awk -v v=$variant '$1 == v { print $3 }' "$WORK/results" | median)" \
    "$(awk -v v=$variant '$1 == v { print $4 }' "$WORK/results" | median)" "$REPEAT"
done
paste <(awk '$1 == "masked" { print $2 }' "$WORK/results") <(awk '$1 == "plain" { print $2 }' "$WORK/results") |
  awk '{ print $1 / $2 }' | median | xargs printf 'masked / plain CPU: %.2f (median of the pairs)\n'
