#!/usr/bin/env bash
# Chart-data throughput against slow queries: a release `liteset serve` (embedded metadata) on a
# throwaway PostgreSQL, one virtual dataset `SELECT 1 AS x FROM pg_sleep(d)` per delay, and for
# each delay a closed loop of USERS concurrent clients POSTing /api/v1/chart/data with
# `force: true` (every request runs its own query: no cache, no coalescing) for DURATION seconds,
# while a probe fetches /api/v1/security/csrf_token/ 20 times a second and records its latency.
# The physical ceiling is USERS / d requests per second.
#
#   bash tests/bench/chart-data.sh                        # needs wrk (apt-get install wrk)
#   USERS=50 DURATION=30 DELAYS="0.1 0.5 1 5" bash tests/bench/chart-data.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/liteset-target}"
export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
USERS="${USERS:-50}"
DURATION="${DURATION:-30}"
DELAYS="${DELAYS:-0.1 0.5 1 5}"
log() { printf '[bench] %s\n' "$*" >&2; }

command -v wrk >/dev/null || { log "wrk is missing: apt-get install wrk"; exit 1; }
cargo build --release -q -p liteset --bin liteset
BIN="$CARGO_TARGET_DIR/release/liteset"

# shellcheck source=tests/pg.sh
source tests/pg.sh
WORK="$(mktemp -d)"
# Pool: one connection per user plus headroom; the database allows 300.
LITESET_DATA_DIR="$WORK/data" LITESET_ADMIN_PASSWORD=bench-admin LITESET_EXAMPLES=false \
    LITESET_DISALLOWED_FUNCTIONS=version LITESET_QUERY__POOL_SIZE=$((USERS + 14)) RUST_LOG=warn \
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
for _ in $(seq 1 1000); do grep -q '^READY ' "$WORK/stdout" 2>/dev/null && break; sleep 0.01; done
BASE="$(sed -n 's/^READY //p' "$WORK/stdout")"

python3 - "$BASE" "$LITESET_TEST_PG_URL" "$WORK" $DELAYS <<'PY'
import json, sys, urllib.request, http.cookiejar
base, pg, work, delays = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
def call(method, url, body=None, headers={}):
    req = urllib.request.Request(base + url, method=method, headers={"Content-Type": "application/json", **headers},
                                 data=None if body is None else json.dumps(body).encode())
    return json.load(opener.open(req))
token = call("POST", "/api/v1/security/login", {"username": "admin", "password": "bench-admin", "provider": "db"})["access_token"]
auth = {"Authorization": "Bearer " + token}
h = {**auth, "X-CSRFToken": call("GET", "/api/v1/security/csrf_token/", headers=auth)["result"]}
db = call("POST", "/api/v1/database/", {"database_name": "bench", "sqlalchemy_uri": pg}, h)["id"]
for d in delays:
    ds = call("POST", "/api/v1/dataset/", {"database": db, "schema": "public", "table_name": f"sleep_{d}",
                                            "sql": f"SELECT 1 AS x FROM pg_sleep({d})"}, h)["id"]
    body = {"datasource": {"id": ds, "type": "table"}, "force": True,
            "queries": [{"columns": ["x"], "row_limit": 10}]}
    open(f"{work}/body_{d}.json", "w").write(json.dumps(body))
open(f"{work}/token", "w").write(token)
PY
TOKEN="$(cat "$WORK/token")"

cat >"$WORK/probe.py" <<'PY'
import http.client, sys, time, urllib.parse
base, token, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
u = urllib.parse.urlparse(base)
conn = http.client.HTTPConnection(u.hostname, u.port)
lat, errors, end = [], 0, time.monotonic() + seconds
while time.monotonic() < end:
    t = time.perf_counter()
    conn.request("GET", "/api/v1/security/csrf_token/", headers={"Authorization": "Bearer " + token})
    r = conn.getresponse(); r.read()
    lat.append((time.perf_counter() - t) * 1000)
    errors += r.status != 200
    time.sleep(max(0.0, 0.05 - (time.perf_counter() - t)))
lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))]
print(f"{pct(0.5):.1f} {pct(0.99):.1f} {errors} {len(lat)}")
PY

rss() { awk '/VmRSS/ {printf "%.0f MB", $2 / 1024}' "/proc/$PID/status"; }
echo "users=$USERS, force: true, $(nproc) cores shared by wrk, the server and PostgreSQL"
printf '| delay | req/s | ceiling %s/d | ratio | p50 | p99 | errors | csrf p50 | csrf p99 | RSS |\n' "$USERS"
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for d in $DELAYS; do
    # Long enough for a dozen round trips per user even at the longest delay, and a little
    # longer than whole round trips so wrk's window does not cut the last one off.
    secs=$(python3 -c "import math; print(max($DURATION, math.ceil(12 * $d * 1.02) + 1))")
    cat >"$WORK/post.lua" <<LUA
wrk.method = "POST"
wrk.body = io.open("$WORK/body_$d.json"):read("*a")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $TOKEN"
LUA
    python3 "$WORK/probe.py" "$BASE" "$TOKEN" "$secs" >"$WORK/probe.out" &
    PROBE=$!
    out="$(wrk -t2 -c"$USERS" -d"${secs}s" --timeout 60s --latency -s "$WORK/post.lua" "$BASE/api/v1/chart/data")"
    wait "$PROBE"
    rps="$(awk '/Requests\/sec/ {print $2}' <<<"$out")"
    p50="$(awk '$1 == "50%" {print $2}' <<<"$out")"
    p99="$(awk '$1 == "99%" {print $2}' <<<"$out")"
    non2xx="$(awk '/Non-2xx/ {print $5}' <<<"$out")"
    sock="$(awk '/Socket errors/ {print $4 $5 $6 $7 $8 $9}' <<<"$out")"
    read -r c50 c99 cerr _ <"$WORK/probe.out"
    ceiling="$(python3 -c "print(f'{$USERS / $d:.1f}')")"
    ratio="$(python3 -c "print(f'{$rps / ($USERS / $d) * 100:.1f} %')")"
    printf '| %s s | %s | %s | %s | %s | %s | %s%s | %s ms | %s ms | %s |\n' \
        "$d" "$rps" "$ceiling" "$ratio" "$p50" "$p99" "${non2xx:-0}" "${sock:+ ($sock)}" "$c50" "$c99" "$(rss)"
    [[ "$cerr" == 0 ]] || log "csrf probe saw $cerr errors"
done
