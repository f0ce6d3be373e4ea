#!/usr/bin/env bash
# Light-endpoint benchmark: starts a release `liteset serve` on the embedded default (SQLite
# metadata) in a temp folder, drives it with wrk over loopback, and prints requests/s, latency
# percentiles and the server's resident memory. Bounded: each endpoint runs for DURATION.
#
#   bash tests/bench/light-endpoints.sh            # needs wrk (apt-get install wrk)
#   DURATION=10s CONNECTIONS=64 bash tests/bench/light-endpoints.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/liteset-target}"
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-64}"
THREADS="${THREADS:-2}"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p liteset --bin liteset
BIN="$CARGO_TARGET_DIR/release/liteset"

WORK="$(mktemp -d)"
cleanup() { [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

start_ns=$(date +%s%N)
LITESET_DATA_DIR="$WORK/data" LITESET_ADMIN_PASSWORD=bench-admin RUST_LOG=warn \
    "$BIN" serve --bind 127.0.0.1:0 >"$WORK/stdout" 2>"$WORK/stderr" &
PID=$!
for _ in $(seq 1 200); do grep -q '^READY ' "$WORK/stdout" 2>/dev/null && break; sleep 0.01; done
BASE="$(sed -n 's/^READY //p' "$WORK/stdout")"
until curl -sf "$BASE/health" >/dev/null; do sleep 0.005; done
echo "start to first /health: $(( ($(date +%s%N) - start_ns) / 1000000 )) ms (fresh data folder: migrations, roles, admin)"

TOKEN="$(curl -sf -X POST "$BASE/api/v1/security/login" -H 'Content-Type: application/json' \
    -d '{"username":"admin","password":"bench-admin","provider":"db"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')"

rss() { awk '/VmRSS/ {print $2 " kB"}' "/proc/$PID/status"; }
echo "idle RSS: $(rss)"

run() {
    local name="$1"; shift
    echo "== $name"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency "$@" | grep -E 'Requests/sec|^ +(50|90|99)%|Non-2xx|Socket errors'
    echo "   server RSS after: $(rss)"
}
run "GET /health" "$BASE/health"
run "GET /api/v1/me/ (Bearer; JWT verify + cached user)" -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/me/"
run "GET /api/v1/security/csrf_token/ (Bearer; authorize + signed cookie)" -H "Authorization: Bearer $TOKEN" "$BASE/api/v1/security/csrf_token/"
cat >"$WORK/login.lua" <<'EOF'
wrk.method = "POST"
wrk.body = '{"username":"admin","password":"bench-admin","provider":"db"}'
wrk.headers["Content-Type"] = "application/json"
EOF
run "POST /api/v1/security/login (Argon2id verify on the hashing workers)" -c 8 -s "$WORK/login.lua" "$BASE/api/v1/security/login"
