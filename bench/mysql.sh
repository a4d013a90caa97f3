#!/usr/bin/env bash
# Rivet's MySQL source vs the MariaDB client on one table, in one run: `mariadb --batch -e "SELECT * FROM …" > file`
# (tab-separated text, the baseline) and rivet → Parquet (zstd) from the same table; wall time as a ratio to the
# baseline, CPU time and peak RSS (target ≤ 128 MB).
# Usage: bash bench/mysql.sh     (MariaDB at RIVET_BENCH_MYSQL_URL, default mysql://root@127.0.0.1:3306/test)
#   BENCH_ROWS=N    rows of the table (default 2000000; ~1 minute to create, kept for the next run)
set -euo pipefail
cd "$(dirname "$0")/.."
MYSQL_URL=${RIVET_BENCH_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}
ROWS=${BENCH_ROWS:-2000000}
WORK=bench/.work
mkdir -p "$WORK"
[[ $ROWS =~ ^[1-9][0-9]*$ ]] || { echo "bench/mysql.sh: BENCH_ROWS must be a positive integer, got '$ROWS'" >&2; exit 1; }
[[ $MYSQL_URL =~ ^mysql://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?/([^?]+)$ ]] \
  || { echo "bench/mysql.sh: RIVET_BENCH_MYSQL_URL must look like mysql://user[:password]@host[:port]/database" >&2; exit 1; }
USER_=${BASH_REMATCH[1]} PASS=${BASH_REMATCH[3]} HOST=${BASH_REMATCH[4]} PORT=${BASH_REMATCH[6]:-3306} DB=${BASH_REMATCH[7]}
client() { MYSQL_PWD=$PASS mariadb -h "$HOST" -P "$PORT" -u "$USER_" "$DB" "$@"; }
[ -f dist/bundle/main.js ] || npm run build >/dev/null

# shellcheck source=bench/lib.sh
source bench/lib.sh

have=$(client -N -e "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'bench_my'" || true)
if [ "$have" != "rows=$ROWS" ]; then
  echo "creating bench_my ($ROWS rows)…" >&2
  client -e "SET @rows = $ROWS; SOURCE bench/make-mysql-table.sql; ALTER TABLE bench_my COMMENT = 'rows=$ROWS'" >/dev/null
fi

cat >"$WORK/mysql.yaml" <<YAML
source: { type: mysql, url_env: RIVET_BENCH_MYSQL_URL }
exports:
  - { name: bench_my, table: bench_my, format: parquet, compression: zstd, batch_size: 10000, destination: { type: local, path: mysql-out } }
YAML
rm -rf "$WORK/mysql-out"

read -r base_s base_rss < <(measure mysql-client bash -c "MYSQL_PWD='$PASS' mariadb -h '$HOST' -P '$PORT' -u '$USER_' '$DB' --batch -e 'SELECT * FROM bench_my' > '$WORK/bench_my.tsv'")
base_cpu=$(cpu_seconds mysql-client)
base_bytes=$(stat -c %s "$WORK/bench_my.tsv")
read -r rivet_s rivet_rss < <(RIVET_BENCH_MYSQL_URL=$MYSQL_URL measure mysql-rivet node bin/rivet.js run -c "$WORK/mysql.yaml")
rivet_cpu=$(cpu_seconds mysql-rivet)
rivet_bytes=$(du -cb "$WORK"/mysql-out/*.parquet | tail -n 1 | cut -f 1)
rm -f "$WORK/bench_my.tsv"

ratio=$(awk -v a="$rivet_s" -v b="$base_s" 'BEGIN { printf "%.2f", a / b }')
rss_ok=$(awk -v r="$rivet_rss" 'BEGIN { print (r <= 128 ? "met" : "missed") }')
echo
echo "bench_my: $ROWS rows × 20 columns, MariaDB $(client -N -e 'SELECT VERSION()'), $(date -u +%Y-%m-%d)"
echo
echo "| run | wall s | ratio | CPU s | peak RSS MB | output MB |"
echo "|---|---:|---:|---:|---:|---:|"
printf '| `mariadb --batch -e "SELECT * FROM bench_my" > file` | %s | 1.00 | %s | %s | %.1f |\n' "$base_s" "$base_cpu" "$base_rss" "$(awk -v b="$base_bytes" 'BEGIN { print b / 1048576 }')"
printf '| rivet → Parquet (zstd) | %s | %s | %s | %s (≤ 128: %s) | %.1f |\n' "$rivet_s" "$ratio" "$rivet_cpu" "$rivet_rss" "$rss_ok" "$(awk -v b="$rivet_bytes" 'BEGIN { print b / 1048576 }')"
