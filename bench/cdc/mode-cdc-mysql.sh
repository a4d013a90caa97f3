#!/usr/bin/env bash
# mode: cdc on MariaDB's binary log: CDC_CHANGES changes (half inserts, 3/10 updates, 1/5 deletes, 1 000-row
# transactions) read by `rivet run` into Parquet, against `mariadb-binlog --read-from-remote-server` decoding the same
# binary log (row images printed as pseudo-SQL, -v) to /dev/null in the same run: changes/s, the ratio, CPU and peak
# RSS, CDC_REPEAT repetitions in alternating order. Starts a MariaDB of its own (a temporary data directory, a free
# port, log_bin / ROW / FULL row images and metadata) unless MYSQL_BINLOG_URL names one; drops what it made.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEAT=${CDC_REPEAT:-3}
CHANGES=${CDC_CHANGES:-1000000}
WORK=bench/.work/cdc-mysql
RESULTS=$WORK/results.jsonl
TABLE=bench_cdc
[ $((CHANGES % 10000)) = 0 ] || { echo "CDC_CHANGES must be a multiple of 10 000" >&2; exit 2; }
INSERTS=$((CHANGES / 2))
UPDATES=$((CHANGES * 3 / 10))
mkdir -p "$WORK"
[ -f dist/bundle/main.js ] || npm run build >/dev/null
source bench/lib.sh

SERVER_PID=
if [ -n "${MYSQL_BINLOG_URL:-}" ]; then
  URL=$MYSQL_BINLOG_URL
else
  DATA=$(mktemp -d /tmp/rivet-bench-mariadb-XXXXXX)
  PORT=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
  ROOT=$([ "$(id -u)" = 0 ] && echo --user=root || true)
  mariadb-install-db --no-defaults --datadir="$DATA/data" $ROOT --auth-root-authentication-method=normal --skip-test-db >/dev/null
  mariadbd --no-defaults --datadir="$DATA/data" $ROOT --port="$PORT" --bind-address=127.0.0.1 --socket="$DATA/sock" \
    --log-error="$DATA/error.log" --log-bin=binlog --server-id=1 --binlog-format=ROW --binlog-row-image=FULL \
    --binlog-row-metadata=FULL --innodb-buffer-pool-size=256M --max-binlog-size=1G &
  SERVER_PID=$!
  for _ in $(seq 100); do mariadb-admin -h 127.0.0.1 -P "$PORT" -u root status >/dev/null 2>&1 && break; sleep 0.2; done
  mariadb -h 127.0.0.1 -P "$PORT" -u root -e "create database test"
  URL="mysql://root@127.0.0.1:$PORT/test"
fi
HOST=$(node -e 'const u = new URL(process.argv[1]); console.log(u.hostname, u.port || 3306, decodeURIComponent(u.username), u.pathname.slice(1))' "$URL")
read -r DB_HOST DB_PORT DB_USER DB_NAME <<<"$HOST"
sql() { mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USER" "$DB_NAME" -N -B -e "$1"; }

cleanup() {
  sql "drop table if exists $TABLE" >/dev/null 2>&1 || true
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; rm -rf "$DATA"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

sql "drop table if exists $TABLE; create table $TABLE (id bigint primary key, amount decimal(12,2), note varchar(80), ts datetime(6), doc longtext, flag bool, uid char(36))"
rm -rf "$WORK/run" "$WORK/saved"
mkdir -p "$WORK/run"
cat >"$WORK/run/cdc.yaml" <<YAML
source: { type: mysql, url: "$URL" }
exports:
  - name: $TABLE
    table: $TABLE
    mode: cdc
    cdc: { server_id: 4999, initial: none }
    format: parquet
    destination: { type: local, path: out }
YAML
node bin/rivet.js run -c "$WORK/run/cdc.yaml" >"$WORK/setup.log" 2>&1 || { cat "$WORK/setup.log" >&2; exit 1; }
cp -a "$WORK/run" "$WORK/saved"
read -r FILE POSITION < <(sql "show master status" | cut -f1,2)

t0=$(date +%s.%N)
{
  for i in $(seq 0 $((INSERTS / 1000 - 1))); do
    echo "insert into $TABLE select seq, (seq % 1000000) / 100, concat('note ', seq, repeat('x', seq % 40)), timestamp '2024-01-01 00:00:00' + interval seq second,
      json_object('k', seq, 's', concat('v', seq), 'a', json_array(seq % 7, seq % 11)), seq % 2 = 0, uuid() from seq_$((i * 1000 + 1))_to_$((i * 1000 + 1000));"
  done
  for i in $(seq 0 $((UPDATES / 1000 - 1))); do
    echo "update $TABLE set amount = amount + 1, note = concat(note, 'u'), ts = ts + interval 1 day, flag = not flag where id between $((i * 1000 + 1)) and $((i * 1000 + 1000));"
  done
  for i in $(seq $((UPDATES / 1000)) $((INSERTS / 1000 - 1))); do
    echo "delete from $TABLE where id between $((i * 1000 + 1)) and $((i * 1000 + 1000));"
  done
} | mariadb -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USER" "$DB_NAME"
echo "workload: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, binary log from $FILE:$POSITION to $(sql "show master status" | cut -f1,2 | tr '\t' ':')"
echo "rivet $(git rev-parse --short HEAD), $(node --version), $(mariadb-binlog --version | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"

record() { # rep label changes wall rss cpu
  node -e '
    const [rep, label, changes, wall, rss, cpu, load] = process.argv.slice(1)
    console.log(JSON.stringify({ at: new Date().toISOString(), rep: +rep, label, changes: +changes, wallSeconds: +wall,
      changesPerSecond: Math.round(changes / wall), maxRssMB: +rss, cpuSeconds: +cpu, load }))
  ' "$@" "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$RESULTS"
}

for rep in $(seq "$REPEAT"); do
  rm -rf "$WORK/run"
  cp -a "$WORK/saved" "$WORK/run"
  order="rivet base"
  [ $((rep % 2)) = 0 ] && order="base rivet"
  for who in $order; do
    if [ "$who" = rivet ]; then
      read -r wall rss < <(measure "rivet-$rep" node bin/rivet.js run -c "$WORK/run/cdc.yaml")
      rows=$(grep -oE '^ *rows: +[0-9,]+' "$WORK/rivet-$rep.time" | tr -dc '0-9' || true)
      [ "$rows" = "$CHANGES" ] || echo "warning: rivet reported ${rows:-no} rows, expected $CHANGES" >&2
      record "$rep" rivet "${rows:-$CHANGES}" "$wall" "$rss" "$(cpu_seconds "rivet-$rep")"
    else
      read -r wall rss < <(measure "base-$rep" mariadb-binlog --read-from-remote-server --host="$DB_HOST" --port="$DB_PORT" \
        --user="$DB_USER" --start-position="$POSITION" --to-last-log --base64-output=DECODE-ROWS -v "$FILE")
      record "$rep" mariadb-binlog "$CHANGES" "$wall" "$rss" "$(cpu_seconds "base-$rep")"
    fi
  done
done

node -e '
  const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse).slice(-2 * process.argv[2])
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const of = (label) => lines.filter((l) => l.label === label)
  const rivet = of("rivet"), base = of("mariadb-binlog")
  const ratios = rivet.map((r) => base.find((b) => b.rep === r.rep).wallSeconds / r.wallSeconds)
  console.log("| reader | changes/s | vs mariadb-binlog (above 1.00: faster) | CPU s | peak RSS MB |")
  console.log("|---|---|---|---|---|")
  for (const [name, xs, ratio] of [["mariadb-binlog -v", base, "1.00"], ["rivet → Parquet", rivet, `${median(ratios).toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(", ")})`]]) {
    console.log(`| ${name} | ${median(xs.map((x) => x.changesPerSecond))} | ${ratio} | ${median(xs.map((x) => x.cpuSeconds))} | ${median(xs.map((x) => x.maxRssMB))} |`)
  }
' "$RESULTS" "$REPEAT"
