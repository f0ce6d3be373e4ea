#!/usr/bin/env bash
# Reproduces the published async-vs-sync Superset study against Liteset (BENCHMARKS.md): a
# throwaway PostgreSQL cluster holding the Star Schema Benchmark (`liteset load-examples`) and
# Liteset's metadata, a release `liteset serve`, and the load harness (`tests/load`) running the
# chosen scenarios with the server's RSS and CPU sampled from /proc.
#
#   bash tests/bench/study.sh                 # s3, s1 at 50 and 200 users, s2 at 20 users
#   SCENARIOS="s3" DURATION=60s bash tests/bench/study.sh
#   SF=0.1 OUT=bench-results bash tests/bench/study.sh
#   SCENARIOS=s3 DELAYS=100,500 S3_DURATION=30s bash tests/bench/study.sh
#   STUDY_LITESET_BIN=/tmp/before/liteset STUDY_LOAD_BIN=/tmp/before/liteset-load bash tests/bench/study.sh
#
# Everything runs on this machine: the harness, the server and PostgreSQL share its cores.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/liteset-target}"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
SF="${SF:-0.1}"
SCENARIOS="${SCENARIOS:-s3 s1-50 s1-200 s2}"
DURATION="${DURATION:-120s}"
S3_DURATION="${S3_DURATION:-$DURATION}"
OUT="${OUT:-bench-results/$(date -u +%Y%m%dT%H%M%SZ)}"
log() { printf '[study] %s\n' "$*" >&2; }

# STUDY_LITESET_BIN / STUDY_LOAD_BIN bench prebuilt binaries (e.g. two commits back to back).
if [[ -z "${STUDY_LITESET_BIN:-}" || -z "${STUDY_LOAD_BIN:-}" ]]; then
    cargo build --release -q -p liteset --bin liteset -p liteset-load --bin liteset-load
fi
BIN="${STUDY_LITESET_BIN:-$CARGO_TARGET_DIR/release/liteset}"
LOAD="${STUDY_LOAD_BIN:-$CARGO_TARGET_DIR/release/liteset-load}"

# shellcheck source=tests/pg.sh
source tests/pg.sh
PG_BASE="${LITESET_TEST_PG_URL%/postgres}"
# psql sits next to the real initdb (PG_BIN may hold only symlinks to it).
PSQL="$(dirname "$(readlink -f "$PG_BIN/initdb")")/psql"
as_pg "$PSQL" -q -h "$PG_TMP" -p "$PG_PORT" -U postgres -c 'CREATE DATABASE ssb' -c 'CREATE DATABASE liteset'

WORK="$(mktemp -d)"
mkdir -p "$OUT"
export LITESET_DATA_DIR="$WORK/data"
export LITESET_METADATA_URL="$PG_BASE/liteset"
export LITESET_SECRET_KEY="study-secret-key-0123456789abcdef0123456789abcdef"
export LITESET_ADMIN_PASSWORD=admin
export RUST_LOG=warn

log "loading SSB at scale factor $SF"
"$BIN" load-examples --database-url "$PG_BASE/ssb" --scale-factor "$SF" \
    >"$OUT/load-examples.txt" 2>&1
cat "$OUT/load-examples.txt" >&2
# The settings load-examples asks for: pg_sleep allowed for the ssb database (S3's datasets)
# and a connection per S3 user.
while read -r line; do
    export "${line?}"
done < <(grep -oE '^\s*LITESET_QUERY__DATABASES__SSB__[A-Z_]+=\S*' "$OUT/load-examples.txt")

"$BIN" serve --bind 127.0.0.1:0 >"$WORK/stdout" 2>"$WORK/stderr" &
PID=$!
stop_server() {
    local status=$?
    kill "$PID" 2>/dev/null
    wait "$PID" 2>/dev/null
    rm -rf "$WORK"
    (exit "$status")
    cleanup
}
trap stop_server EXIT
for _ in $(seq 1 3000); do grep -q '^READY ' "$WORK/stdout" 2>/dev/null && break; sleep 0.01; done
BASE="$(sed -n 's/^READY //p' "$WORK/stdout")"
[[ -n "$BASE" ]] || { log "the server did not start"; cat "$WORK/stderr" >&2; exit 1; }
log "server $BASE (pid $PID); results in $OUT"

common=(--url "$BASE" --username admin --password admin --server-pid "$PID")
for s in $SCENARIOS; do
    case "$s" in
        s3) "$LOAD" s3 "${common[@]}" --users 50 --duration "$S3_DURATION" --out "$OUT/s3" \
                ${DELAYS:+--delays "$DELAYS"} ;;
        s1-*) "$LOAD" s1 "${common[@]}" --users "${s#s1-}" --duration "$DURATION" --ramp-up 20s --out "$OUT/$s" ;;
        s2) "$LOAD" s2 "${common[@]}" --users 20 --duration "$DURATION" --out "$OUT/s2" ;;
        *) log "unknown scenario $s"; exit 2 ;;
    esac
done
log "done: $OUT"
