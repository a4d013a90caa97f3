# Shared by the bench scripts (sourced; expects PG_URL and WORK).

ensure_table() { # name rows [sql file] — (re)creates the table unless it was made for that row count
  local have sql=${3:-bench/make-table.sql}
  have=$(psql "$PG_URL" -XtAc "select obj_description('$1'::regclass, 'pg_class')" 2>/dev/null || true)
  if [ "$have" != "rows=$2" ]; then
    echo "creating $1 ($2 rows, $sql)…" >&2
    psql "$PG_URL" -Xq -v ON_ERROR_STOP=1 -v rows="$2" -v table="$1" -f "$sql" >&2
    psql "$PG_URL" -Xq -c "comment on table $1 is 'rows=$2'" >&2
  fi
}

# measure LABEL CMD… → "seconds rss_mb" (wall clock and maximum resident set size from /usr/bin/time -v)
measure() {
  local label=$1; shift
  /usr/bin/time -v "$@" >"$WORK/$label.out" 2>"$WORK/$label.time" || { cat "$WORK/$label.time" >&2; exit 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; wall = s }
              /Maximum resident set size/ { rss = $2 / 1024 }
              END { printf "%.2f %.0f\n", wall, rss }' "$WORK/$label.time"
}

# cpu_seconds LABEL → user + system CPU seconds of the last `measure LABEL` (steadier than wall time under load)
cpu_seconds() {
  awk -F': ' '/User time \(seconds\)|System time \(seconds\)/ { s += $2 } END { printf "%.2f\n", s }' "$WORK/$1.time"
}
