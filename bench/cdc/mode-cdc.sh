#!/usr/bin/env bash
# `mode: cdc` end to end: 1M changes read by `rivet run` into Parquet on local disk, against `pg_recvlogical`
# reading the same WAL from a slot created at the same position, in the same run. Prints changes/s of each, the
# ratio rivet / pg_recvlogical, rivet's peak RSS and CPU seconds (and the server's: see "server CPU" below);
# medians of CDC_REPEAT runs. bench/cdc/LOG.md ("mode: cdc, end to end") has the results. Not part of `npm test`.
#
#   bash bench/cdc/mode-cdc.sh           (PostgreSQL >= 14 with wal_level=logical at RIVET_BENCH_PG_URL)
#
# The server must let the script create and drop the table bench_cdc, the publication bench_cdc_pub and the slots
# bench_cdc_run, bench_cdc_src, bench_cdc_base (all dropped on exit). Per shape:
#   1. the table (workload.sql's columns, empty) and its publication;
#   2. a first `rivet run` (cdc.initial: none) creates the slot bench_cdc_run and stores its position; the slot is
#      copied at once (pg_copy_logical_replication_slot) to bench_cdc_src, which nobody reads: every measured run
#      reads a fresh copy of it, so all of them start at that same position; Rivet's state and output directory
#      after the first run are kept to be restored before each repetition;
#   3. the workload: 500 000 inserts, 300 000 updates (4 of 7 columns), 200 000 deletes — shape `tx1000` in
#      transactions of 1 000 rows, shape `tx1m` all in one transaction — then the target LSN (pg_current_wal_lsn);
#   4. CDC_REPEAT times (the order alternating): `rivet run` (its slot a fresh copy of bench_cdc_src, its state and
#      output restored), and `pg_recvlogical --start --endpos <target> -o proto_version=1
#      -o publication_names=bench_cdc_pub -o binary=true -f /dev/null` on another copy, both under /usr/bin/time -v.
#      Both read the same WAL: a `rivet run` reads up to the WAL position at its start, which other sessions' writes
#      (any database's) move past the target, so the export has `cdc.max_events` = the workload's change count: it
#      stops at the workload's last commit, as pg_recvlogical stops at the target.
#
# Variables: RIVET_BENCH_PG_URL (postgres://postgres@127.0.0.1:5432/test), CDC_REPEAT (3), CDC_SHAPES
# ("tx1000 tx1m"), CDC_CHANGES (1000000: a quick check with fewer, a multiple of 10 000; the mix stays 50/30/20 %),
# CDC_PROFILE=1 (each rivet run under `node --cpu-prof`, profiles kept in bench/.work/cdc-mode/), RIVET_NODE_OPTIONS
# (extra node flags for the rivet runs), CDC_FORMAT (parquet; csv or ndjson for comparison), CDC_EXPORT_KEYS (YAML
# lines added to the export, e.g. "compression: snappy" or "batch_size: 2000"). Work files in bench/.work/cdc-mode/
# (ignored by git); every measurement is also a JSON line in bench/.work/cdc-mode/results.jsonl.
#
# Server CPU: when the server runs on this machine and /proc shows its postmaster, the CPU seconds of the server
# processes that exited during a measurement (the walsender, and the reader's short normal connections) are read
# from the postmaster's cutime + cstime; another session's backends ending meanwhile would count too.
set -euo pipefail
cd "$(dirname "$0")/../.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
REPEAT=${CDC_REPEAT:-3}
SHAPES=${CDC_SHAPES:-tx1000 tx1m}
CHANGES=${CDC_CHANGES:-1000000}
PROFILE=${CDC_PROFILE:-0}
FORMAT=${CDC_FORMAT:-parquet}
EXTRA=${CDC_EXPORT_KEYS:-}
WORK=bench/.work/cdc-mode
RESULTS=$WORK/results.jsonl
TABLE=bench_cdc
PUB=bench_cdc_pub
[ $((CHANGES % 10000)) = 0 ] || { echo "CDC_CHANGES must be a multiple of 10 000" >&2; exit 2; }
INSERTS=$((CHANGES / 2))
UPDATES=$((CHANGES * 3 / 10))
DELETES=$((CHANGES / 5))
mkdir -p "$WORK"
[ -f dist/bundle/main.js ] || npm run build >/dev/null

# shellcheck source=bench/lib.sh
source bench/lib.sh

sql() { psql "$PG_URL" -XtAq -v ON_ERROR_STOP=1 -c "$1"; }

slot_inactive() { # waits until the slot is not held by a walsender (one that ended a moment ago may still hold it)
  for _ in $(seq 100); do
    [ "$(sql "select count(*) from pg_replication_slots where slot_name = '$1' and active")" = 0 ] && return
    sleep 0.1
  done
  echo "slot $1 still active" >&2
}
drop_slot() {
  slot_inactive "$1"
  sql "select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = '$1'" >/dev/null
}
copy_slot() { sql "select 1 from pg_copy_logical_replication_slot('$1', '$2')" >/dev/null; }

cleanup() {
  sql "select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name like 'bench\_cdc\_%' and not active" >/dev/null || true
  sql "drop publication if exists $PUB" >/dev/null 2>&1 || true
  sql "drop table if exists $TABLE" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The postmaster, to read its children's CPU time: the checkpointer's parent.
POSTMASTER=$(ps -o ppid= -p "$(sql "select pid from pg_stat_activity where backend_type = 'checkpointer'")" 2>/dev/null | tr -d ' ' || true)
server_ticks() { # cutime + cstime of the postmaster (clock ticks), or empty
  [ -n "$POSTMASTER" ] && [ -r "/proc/$POSTMASTER/stat" ] || return 0
  sed 's/^.*) //' "/proc/$POSTMASTER/stat" | awk '{ print $14 + $15 }'
}
TICKS=$(getconf CLK_TCK)

setup_table() {
  cleanup
  sql "create table $TABLE (id int8 primary key, amount numeric(12,2), note text, ts timestamptz, doc jsonb, flag bool, uid uuid)"
  sql "create publication $PUB for table $TABLE"
}

# The workload of a shape (SQL on stdin to psql): the same rows and statements as workload.sql, cut differently.
workload_sql() {
  local rows="select g, (g % 1000000) / 100.0, 'note ' || g || repeat('x', (g % 40)::int),
      timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second',
      jsonb_build_object('k', g, 's', 'v' || g, 'a', jsonb_build_array(g % 7, g % 11)),
      g % 2 = 0, md5(g::text)::uuid from generate_series(lo, hi) g"
  local update="update $TABLE set amount = amount + 1, note = note || 'u', ts = ts + interval '1 day', flag = not flag"
  case $1 in
    tx1000)
      cat <<SQL
do \$\$ declare lo int8; hi int8; begin
  for i in 0..$((INSERTS / 1000 - 1)) loop
    lo := i * 1000 + 1; hi := i * 1000 + 1000;
    insert into $TABLE $rows;
    commit;
  end loop;
end \$\$;
do \$\$ begin
  for i in 0..$((UPDATES / 1000 - 1)) loop
    $update where id between i * 1000 + 1 and i * 1000 + 1000;
    commit;
  end loop;
end \$\$;
do \$\$ begin
  for i in $((UPDATES / 1000))..$((INSERTS / 1000 - 1)) loop
    delete from $TABLE where id between i * 1000 + 1 and i * 1000 + 1000;
    commit;
  end loop;
end \$\$;
SQL
      ;;
    tx1m)
      cat <<SQL
begin;
do \$\$ declare lo int8 := 1; hi int8 := $INSERTS; begin insert into $TABLE $rows; end \$\$;
$update where id between 1 and $UPDATES;
delete from $TABLE where id between $((UPDATES + 1)) and $INSERTS;
commit;
SQL
      ;;
    *) echo "unknown shape $1" >&2; exit 2 ;;
  esac
}

# One measurement: "wall_s rss_mb cpu_s server_cpu_s" of CMD… under /usr/bin/time -v (lib.sh's measure).
timed() {
  local label=$1 slot=$2; shift 2
  local before after wall rss
  before=$(server_ticks)
  read -r wall rss < <(measure "$label" "$@")
  slot_inactive "$slot"
  sleep 0.3 # the walsender is reaped by the postmaster just after it lets go of the slot
  after=$(server_ticks)
  local server=n/a
  [ -n "$before" ] && server=$(awk -v a="$after" -v b="$before" -v t="$TICKS" 'BEGIN { printf "%.2f", (a - b) / t }')
  echo "$wall $rss $(cpu_seconds "$label") $server"
}

record() { # shape rep label changes wall rss cpu server
  node -e '
    const [shape, rep, label, changes, wall, rss, cpu, server, load] = process.argv.slice(1)
    console.log(JSON.stringify({ at: new Date().toISOString(), shape, rep: +rep, label, changes: +changes, wallSeconds: +wall,
      changesPerSecond: Math.round(changes / wall), maxRssMB: +rss, cpuSeconds: +cpu, serverCpuSeconds: server === "n/a" ? null : +server, load }))
  ' "$@" "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS"
}

config() { # the export, state beside it
  cat >"$WORK/run/cdc.yaml" <<YAML
source: { type: postgres, url: "$PG_URL", application_name: rivet-bench-cdc }
exports:
  - name: $TABLE
    table: $TABLE
    mode: cdc
    cdc: { slot: bench_cdc_run, publication: $PUB, initial: none, max_events: $CHANGES }
    format: $FORMAT
    destination: { type: local, path: out }
$(printf '%s\n' "$EXTRA" | sed '/^$/d; s/^/    /')
YAML
}

# Counts the changes of the run's Parquet parts by __op (DuckDB), as "delete=N insert=N update=N".
op_counts() {
  node --input-type=module -e '
    import { DuckDBInstance } from "@duckdb/node-api"
    const q = String.fromCharCode(39)
    const instance = await DuckDBInstance.create(":memory:")
    const connection = await instance.connect()
    const result = await connection.runAndReadAll(`select __op, count(*) from read_parquet(${q}${process.argv[1]}${q}) group by 1 order by 1`)
    console.log(result.getRows().map(([op, n]) => `${op}=${n}`).join(" "))
  ' "$WORK/run/out/*.$1"
}

echo "rivet $(git rev-parse --short HEAD), $(node --version), $(pg_recvlogical --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "format: $FORMAT${EXTRA:+, $(echo "$EXTRA" | tr '\n' ' ')}; shapes: $SHAPES; $CHANGES changes each ($INSERTS inserts, $UPDATES updates, $DELETES deletes); $REPEAT repetitions"
RUN_TAG=$(date -u +%Y%m%dT%H%M%S)
SINCE=$(date -u +%Y-%m-%dT%H:%M:%S.%3N)

for shape in $SHAPES; do
  echo "== $shape"
  setup_table
  rm -rf "$WORK/run" "$WORK/saved"
  mkdir -p "$WORK/run"
  config
  node bin/rivet.js run -c "$WORK/run/cdc.yaml" >"$WORK/setup.log" 2>&1 || { cat "$WORK/setup.log" >&2; exit 1; }
  copy_slot bench_cdc_run bench_cdc_src
  cp -a "$WORK/run" "$WORK/saved"
  start=$(sql "select confirmed_flush_lsn from pg_replication_slots where slot_name = 'bench_cdc_src'")
  t0=$(date +%s.%N)
  workload_sql "$shape" | psql "$PG_URL" -Xq -v ON_ERROR_STOP=1 >/dev/null
  target=$(sql "select pg_current_wal_lsn()")
  echo "workload: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, WAL $start → $target ($(sql "select pg_size_pretty(pg_wal_lsn_diff('$target', '$start'))"))"
  for rep in $(seq "$REPEAT"); do
    if [ "$rep" -gt 1 ]; then
      drop_slot bench_cdc_run
      copy_slot bench_cdc_src bench_cdc_run
      rm -rf "$WORK/run"
      cp -a "$WORK/saved" "$WORK/run"
    fi
    order="rivet base"
    [ $((rep % 2)) = 0 ] && order="base rivet"
    for who in $order; do
      if [ "$who" = rivet ]; then
        flags=${RIVET_NODE_OPTIONS:-}
        [ "$PROFILE" = 1 ] && flags="$flags --cpu-prof --cpu-prof-dir=$WORK/profile-$shape-$RUN_TAG-$rep"
        # shellcheck disable=SC2086
        read -r wall rss cpu server < <(timed "rivet-$shape-$rep" bench_cdc_run node $flags bin/rivet.js run -c "$WORK/run/cdc.yaml")
        rows=$(grep -oE '^ *rows: +[0-9,]+' "$WORK/rivet-$shape-$rep.time" | tr -dc '0-9' || true)
        [ "$rows" = "$CHANGES" ] || echo "warning: rivet reported ${rows:-no} rows, expected $CHANGES" >&2
        [ "$rep" = 1 ] && [ "$FORMAT" = parquet ] && echo "rivet's parts by __op: $(op_counts parquet)"
        record "$shape" "$rep" rivet "${rows:-$CHANGES}" "$wall" "$rss" "$cpu" "$server"
      else
        copy_slot bench_cdc_src bench_cdc_base
        read -r wall rss cpu server < <(timed "base-$shape-$rep" bench_cdc_base pg_recvlogical -d "$PG_URL" --slot bench_cdc_base --start \
          --endpos "$target" --no-loop -o proto_version=1 -o publication_names="$PUB" -o binary=true -f /dev/null)
        drop_slot bench_cdc_base
        record "$shape" "$rep" pg_recvlogical "$CHANGES" "$wall" "$rss" "$cpu" "$server"
      fi
      tail -1 "$RESULTS" | node -e '
        const r = JSON.parse(require("fs").readFileSync(0, "utf8"))
        console.log(`  run ${r.rep} ${r.label.padEnd(14)} ${String(r.changesPerSecond).padStart(7)} changes/s  ${r.wallSeconds.toFixed(2).padStart(6)} s  rss ${String(r.maxRssMB).padStart(4)} MB  cpu ${r.cpuSeconds} s  server cpu ${r.serverCpuSeconds ?? "n/a"} s  load ${r.load}`)'
    done
  done
  drop_slot bench_cdc_run
  drop_slot bench_cdc_src
done

echo
echo "== medians of this run ($RUN_TAG)"
node -e '
  const [file, since] = process.argv.slice(1)
  const rows = require("fs").readFileSync(file, "utf8").trim().split("\n").map(JSON.parse).filter((r) => r.at >= since)
  const median = (xs) => { const s = xs.filter((x) => x !== null).sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)] : null }
  console.log("| shape | reader | changes/s (runs) | ratio to pg_recvlogical (per run) | CPU s | server CPU s | peak RSS MB (runs) |")
  console.log("|---|---|---|---|---|---|---|")
  for (const shape of [...new Set(rows.map((r) => r.shape))]) {
    const of = (label) => rows.filter((r) => r.shape === shape && r.label === label).sort((a, b) => a.rep - b.rep)
    const base = of("pg_recvlogical"), rivet = of("rivet")
    const ratios = rivet.map((r) => r.changesPerSecond / base.find((b) => b.rep === r.rep).changesPerSecond)
    for (const [label, rs] of [["pg_recvlogical", base], ["rivet → Parquet", rivet]]) {
      const ratio = label === "pg_recvlogical" ? "1.00" : `${median(ratios).toFixed(2)} (${ratios.map((x) => x.toFixed(2)).join(", ")})`
      console.log(`| ${shape} | ${label} | ${median(rs.map((r) => r.changesPerSecond))} (${rs.map((r) => r.changesPerSecond).join(", ")}) | ${ratio} | ${median(rs.map((r) => r.cpuSeconds))} | ${median(rs.map((r) => r.serverCpuSeconds)) ?? "n/a"} | ${median(rs.map((r) => r.maxRssMB))} (${rs.map((r) => r.maxRssMB).join(", ")}) |`)
    }
  }
'  "$RESULTS" "$SINCE"
echo "targets (the issue): ≥ 150 000 changes/s; peak RSS ≤ 160 MB whatever the transaction size. Load now: $(cut -d' ' -f1-3 /proc/loadavg)"
