#!/usr/bin/env bash
# Rivet → S3 vs Rivet → local disk on the same tables, in the same run: wall time ratio and peak RSS.
# Usage: bash bench/s3.sh            (needs PostgreSQL at RIVET_BENCH_PG_URL, default 127.0.0.1:5432/test)
# The S3 side is the test server (test/support/s3: s3rver behind a SigV4-checking front end) on loopback, in its
# own process on the same machine, so it competes with Rivet and PostgreSQL for the CPUs. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_URL=${RIVET_BENCH_PG_URL:-postgres://postgres@127.0.0.1:5432/test}
WORK=bench/.work
BUCKET=rivet-bench
mkdir -p "$WORK"
[ -f dist/bundle/main.js ] || npm run build >/dev/null

# shellcheck source=bench/lib.sh
source bench/lib.sh

ensure_table bench_2m 2000000
ensure_table bench_4m 4000000

# The S3 test server in the background; it prints one JSON line with its endpoint and key pair once it is ready.
node node_modules/vite-node/vite-node.mjs test/support/s3/serve.ts -- "$BUCKET" >"$WORK/s3-server.json" 2>"$WORK/s3-server.log" &
SERVER_PID=$!
trap 'kill -TERM "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$WORK/s3-server.json" ] && break; sleep 0.1; done
[ -s "$WORK/s3-server.json" ] || { echo "the S3 test server did not start:" >&2; cat "$WORK/s3-server.log" >&2; exit 1; }
server_field() { node -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(s[process.argv[2]])' "$WORK/s3-server.json" "$1"; }
ENDPOINT=$(server_field endpoint)
export RIVET_BENCH_S3_KEY RIVET_BENCH_S3_SECRET
RIVET_BENCH_S3_KEY=$(server_field accessKeyId)
RIVET_BENCH_S3_SECRET=$(server_field secretAccessKey)

config() { # table destination(local|s3) → path of a config exporting the table to Parquet (zstd)
  local file="$WORK/$1-$2.yaml" destination
  rm -rf "$WORK/out-$1"
  if [ "$2" = s3 ]; then
    destination="{ type: s3, bucket: $BUCKET, prefix: $1/, region: us-east-1, endpoint: \"$ENDPOINT\", access_key_env: RIVET_BENCH_S3_KEY, secret_key_env: RIVET_BENCH_S3_SECRET }"
  else
    destination="{ type: local, path: out-$1 }"
  fi
  cat >"$file" <<YAML
source: { type: postgres, url: "$PG_URL" }
exports:
  - name: $1
    table: $1
    format: parquet
    destination: $destination
YAML
  echo "$file"
}

export AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
read -r local2_s local2_rss < <(measure local2 node bin/rivet.js run -c "$(config bench_2m local)")
read -r s32_s s32_rss < <(measure s3-2 node bin/rivet.js run -c "$(config bench_2m s3)")
read -r local4_s local4_rss < <(measure local4 node bin/rivet.js run -c "$(config bench_4m local)")
read -r s34_s s34_rss < <(measure s3-4 node bin/rivet.js run -c "$(config bench_4m s3)")
rm -rf "$WORK/out-bench_2m" "$WORK/out-bench_4m"

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
cat <<TABLE
| run (Parquet zstd, 20 columns) | wall s | vs local | peak RSS MB |
|---|---|---|---|
| bench_2m → local | $local2_s | 1.00 | $local2_rss |
| bench_2m → S3 (test server, 8MiB parts × 4) | $s32_s | $(ratio "$s32_s" "$local2_s") | $s32_rss |
| bench_4m → local | $local4_s | 1.00 | $local4_rss |
| bench_4m → S3 (test server, 8MiB parts × 4) | $s34_s | $(ratio "$s34_s" "$local4_s") | $s34_rss ($(ratio "$s34_rss" "$s32_rss")× the 2M run) |
TABLE
