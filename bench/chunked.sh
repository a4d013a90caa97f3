#!/usr/bin/env bash
# Issues #4 and #14: chunked `parallel: 2` vs `parallel: 1` speedup, and the longest single statement PostgreSQL saw
# for each run (full, chunked ×1, chunked ×2, keyset), next to the `psql \copy` baseline. Prints a Markdown table.
# Usage: bash bench/chunked.sh       (PostgreSQL at RIVET_BENCH_PG_URL, default 127.0.0.1:5432/test, as a superuser)
#        ROWS=200000 bash bench/chunked.sh   quick check on a smaller table (bench_r200000)
#        RIVET_BENCH_PG_LOG=/path/to/server.log   when the server log is not where this script looks
# Statement timings come from the server log: each Rivet run connects with `log_min_duration_statement=0` in its
# own session (the URL's `options`) and a distinct application_name. While the script runs, log_line_prefix is
# set (ALTER SYSTEM + reload) to one that names the application; it is put back on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
ROWS=${ROWS:-2000000}
TABLE=$([ "$ROWS" = 2000000 ] && echo bench_2m || echo "bench_r$ROWS")
STATEMENT_TARGET_MS=200
SPEEDUP_TARGET=1.5
PREFIX='%m [%p] app=%a %q%u@%d '
[ -f dist/bundle/main.js ] || npm run build >/dev/null

# shellcheck source=bench/lib.sh
source bench/lib.sh

sql() { # SQL [psql -v assignments…] → unaligned result; SQL on stdin so :'var' interpolation works
  local text=$1; shift
  printf '%s\n' "$text" | psql "$PG_URL" -XtAq -v ON_ERROR_STOP=1 "$@"
}

[ "$(sql "show is_superuser")" = on ] || {
  echo "bench/chunked.sh needs a superuser connection (it sets log_min_duration_statement and log_line_prefix)" >&2
  exit 1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rivet-bench-chunked.XXXXXX")
OLD_PREFIX=$(sql "show log_line_prefix")
OLD_IN_AUTO_CONF=$(sql "select coalesce(sourcefile like '%postgresql.auto.conf', false) from pg_settings where name = 'log_line_prefix'")
cleanup() {
  if [ "$OLD_PREFIX" != "$PREFIX" ]; then
    if [ "$OLD_IN_AUTO_CONF" = t ]; then
      sql "ALTER SYSTEM SET log_line_prefix = :'old'" -v old="$OLD_PREFIX" || true
    else
      sql "ALTER SYSTEM RESET log_line_prefix" || true
    fi
    sql "select pg_reload_conf()" >/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$OLD_PREFIX" != "$PREFIX" ]; then
  sql "ALTER SYSTEM SET log_line_prefix = :'prefix'" -v prefix="$PREFIX"
  sql "select pg_reload_conf()" >/dev/null
  for _ in $(seq 1 50); do [ "$(sql "show log_line_prefix")" = "$PREFIX" ] && break; sleep 0.1; done
  [ "$(sql "show log_line_prefix")" = "$PREFIX" ] || { echo "log_line_prefix did not take effect" >&2; exit 1; }
fi

# The log file as the server names it: the collector's current file (relative to the data directory), else the
# Debian/Ubuntu default for a server logging to stderr.
log_file() {
  if [ -n "${RIVET_BENCH_PG_LOG:-}" ]; then echo "$RIVET_BENCH_PG_LOG"; return; fi
  local current
  current=$(sql "select coalesce(pg_current_logfile('stderr'), '')")
  if [ -n "$current" ]; then echo "$current"; return; fi
  echo "/var/log/postgresql/postgresql-$(sql "show server_version_num" | cut -c1-2)-main.log"
}
# Read through the server (pg_stat_file / pg_read_file, superuser) so it works whoever owns the file.
log_size() { sql "select size from pg_stat_file(:'f')" -v f="$1"; }
log_since() { # file offset → the bytes appended since offset
  local size; size=$(log_size "$1")
  sql "select pg_read_file(:'f', :offset, :length)" -v f="$1" -v offset="$2" -v length=$((size - $2))
}
LOG=$(log_file)
log_size "$LOG" >/dev/null 2>&1 || {
  echo "cannot read the PostgreSQL log $LOG; set RIVET_BENCH_PG_LOG to the server's log file" >&2
  exit 1
}

# Statement statistics of one application from a stretch of log (stdin), as
# "longest_ms longest_kind p99_ms steps longest_txn_s"; see the note printed under the table.
statement_stats() {
  gawk -v app="$1" '
    function seconds(date, clock,   d, c) {
      split(date, d, "-"); split(clock, c, ":")
      return mktime(d[1] " " d[2] " " d[3] " " c[1] " " c[2] " " int(c[3]), 1) + (c[3] - int(c[3]))
    }
    $5 == "app=" app && match($0, / LOG:  duration: ([0-9.]+) ms  ([^:]*): ?(.*)$/, m) {
      pid = $4; ms = m[1] + 0; kind = m[2]; body = tolower(m[3])
      end = seconds($1, $2)
      if (ms > longest) { longest = ms; longest_kind = kind }
      if (kind !~ /^(statement|execute)/) next
      work[++n] = ms
      if (body ~ /^begin/) begun[pid] = end - ms / 1000
      else if (body ~ /^(commit|rollback)/ && pid in begun) {
        if (end - begun[pid] > txn) txn = end - begun[pid]
        delete begun[pid]
      }
    }
    END {
      if (n == 0) { print "n/a n/a n/a 0 n/a"; exit }
      asort(work)
      i = int(0.99 * n); if (i < 0.99 * n) i++
      gsub(/ /, "_", longest_kind)
      printf "%.1f %s %.1f %d %.2f\n", longest, longest_kind, work[i], n, txn
    }'
}

# rivet_run LABEL "MODE-KEYS" (flow-mapping pairs) → "wall_s rss_mb longest_ms longest_kind p99_ms steps longest_txn_s"
rivet_run() {
  local label=$1 keys=$2 app="rivet-bench-$$-$1" url start stats wall rss exported
  url="$PG_URL$([[ $PG_URL == *\?* ]] && echo '&' || echo '?')options=-c%20log_min_duration_statement%3D0"
  cat >"$WORK/$label.yaml" <<YAML
source: { type: postgres, url: "$url", application_name: $app }
exports:
  - { name: $TABLE, table: $TABLE, format: parquet, $keys, destination: { type: local, path: out-$label } }
YAML
  start=$(log_size "$LOG")
  read -r wall rss < <(measure "$label" node bin/rivet.js run -c "$WORK/$label.yaml")
  stats=$(log_since "$LOG" "$start" | statement_stats "$app")
  # Rivet prints its run summary on stderr, which measure keeps in $label.time with time's report.
  exported=$(grep -oE '^ *rows: +[0-9,]+' "$WORK/$label.time" | tr -dc '0-9' || true)
  [ "$exported" = "$ROWS" ] || echo "warning: the $label run reported ${exported:-no} rows, expected $ROWS" >&2
  [ "${stats#n/a}" = "$stats" ] || echo "warning: no statements of $app in $LOG (is the server logging there?)" >&2
  rm -rf "$WORK/out-$label"
  echo "$wall $rss $stats"
}

ensure_table "$TABLE" "$ROWS"

read -r copy_s copy_rss < <(measure copy psql "$PG_URL" -c "\\copy (select * from $TABLE) to '$WORK/copy.csv' csv header")
rm -f "$WORK/copy.csv"
read -r full_s full_rss full_max full_kind full_p99 full_n full_txn < <(rivet_run full "mode: full")
read -r c1_s c1_rss c1_max c1_kind c1_p99 c1_n c1_txn < <(rivet_run chunked-p1 "mode: chunked, chunk_size: 100000, parallel: 1")
read -r c2_s c2_rss c2_max c2_kind c2_p99 c2_n c2_txn < <(rivet_run chunked-p2 "mode: chunked, chunk_size: 100000, parallel: 2")
read -r k_s k_rss k_max k_kind k_p99 k_n k_txn < <(rivet_run keyset "mode: keyset, page_size: 100000")

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
verdict() { # value op limit → PASS / MISS
  awk -v v="$1" -v op="$2" -v l="$3" 'BEGIN { ok = (v == "n/a") ? 0 : (op == ">=" ? v + 0 >= l : v + 0 <= l); print ok ? "PASS" : "MISS" }'
}
speedup=$(ratio "$c1_s" "$c2_s")
statement_row() { # max kind → "max ms (kind) PASS|MISS"
  echo "$1 ($(echo "$2" | tr _ ' ')) $(verdict "$1" "<=" "$STATEMENT_TARGET_MS")"
}

cat <<TABLE
| run ($TABLE: $ROWS rows × 20 columns → Parquet) | parallel | wall s | vs \\copy | speedup vs parallel 1 | peak RSS MB | longest statement ms | p99 statement ms | statements | longest transaction s |
|---|---|---|---|---|---|---|---|---|---|
| psql \\copy … csv header | — | $copy_s | 1.00 | — | $copy_rss | — | — | — | — |
| rivet mode: full | — | $full_s | $(ratio "$full_s" "$copy_s") | — | $full_rss | $full_max ($(echo "$full_kind" | tr _ ' ')) | $full_p99 | $full_n | $full_txn |
| rivet mode: chunked (chunk_size 100000) | 1 | $c1_s | $(ratio "$c1_s" "$copy_s") | 1.00 | $c1_rss | $(statement_row "$c1_max" "$c1_kind") | $c1_p99 | $c1_n | $c1_txn |
| rivet mode: chunked (chunk_size 100000) | 2 | $c2_s | $(ratio "$c2_s" "$copy_s") | $speedup $(verdict "$speedup" ">=" "$SPEEDUP_TARGET") | $c2_rss | $(statement_row "$c2_max" "$c2_kind") | $c2_p99 | $c2_n | $c2_txn |
| rivet mode: keyset (page_size 100000) | — | $k_s | $(ratio "$k_s" "$copy_s") | — | $k_rss | $(statement_row "$k_max" "$k_kind") | $k_p99 | $k_n | $k_txn |

Targets (issues #4, #14): chunked parallel 2 ≥ ${SPEEDUP_TARGET}× parallel 1 on 2 cores; longest statement ≤ ${STATEMENT_TARGET_MS} ms for chunked (chunk_size 100000) and keyset.
A statement is one step PostgreSQL logs with log_min_duration_statement = 0 in Rivet's sessions: a simple query
(BEGIN, SET LOCAL …, COPY …) or a Parse, Bind or Execute of the extended protocol. Its time includes any wait
while the server sends rows Rivet has not read yet. Read through a cursor, each fetch of batch_size rows is one
Execute and one statement; read with COPY, a whole chunk or page is one statement. "longest" is over all steps;
p99 and the count are over Execute and simple-query steps (below 100 of them, p99 is the maximum). A transaction
is BEGIN … COMMIT on one connection: the whole export in full mode, one chunk in chunked mode, one page in keyset.
TABLE
