#!/usr/bin/env bash
# Catalog benchmark: starts a release `liteset serve` on the embedded default (SQLite metadata),
# registers a SQLite analytics file, creates one dataset, CHARTS charts and 20 dashboards over
# the API, then drives the catalog's list and show endpoints with wrk over loopback.
#
#   bash tests/bench/catalog.sh                    # needs wrk (apt-get install wrk)
#   CHARTS=1000 DURATION=10s bash tests/bench/catalog.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/liteset-target}"
DURATION="${DURATION:-10s}"
CONNECTIONS="${CONNECTIONS:-32}"
THREADS="${THREADS:-2}"
CHARTS="${CHARTS:-200}"

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
cargo build --release -q -p liteset --bin liteset
BIN="$CARGO_TARGET_DIR/release/liteset"

WORK="$(mktemp -d)"
cleanup() { [[ -n "${PID:-}" ]] && kill "$PID" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

python3 - "$WORK/sales.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("CREATE TABLE sales (id INTEGER PRIMARY KEY, region VARCHAR(20), amount FLOAT, sold_at DATETIME)")
db.executemany("INSERT INTO sales (region, amount, sold_at) VALUES (?, ?, ?)", [("north", i * 1.5, "2024-01-01") for i in range(100)])
db.commit()
PY

LITESET_DATA_DIR="$WORK/data" LITESET_ADMIN_PASSWORD=bench-admin RUST_LOG=warn \
    "$BIN" serve --bind 127.0.0.1:0 >"$WORK/stdout" 2>"$WORK/stderr" &
PID=$!
for _ in $(seq 1 500); do grep -q '^READY ' "$WORK/stdout" 2>/dev/null && break; sleep 0.01; done
BASE="$(sed -n 's/^READY //p' "$WORK/stdout")"

python3 - "$BASE" "$WORK/sales.db" "$CHARTS" "$WORK/token" <<'PY'
import json, sys, urllib.request, http.cookiejar
base, path, charts, token_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
def call(method, url, body=None, headers={}):
    req = urllib.request.Request(base + url, method=method, headers={"Content-Type": "application/json", **headers},
                                 data=None if body is None else json.dumps(body).encode())
    return json.load(opener.open(req))
token = call("POST", "/api/v1/security/login", {"username": "admin", "password": "bench-admin", "provider": "db"})["access_token"]
auth = {"Authorization": "Bearer " + token}
csrf = call("GET", "/api/v1/security/csrf_token/", headers=auth)["result"]
h = {**auth, "X-CSRFToken": csrf}
db = call("POST", "/api/v1/database/", {"database_name": "bench", "sqlalchemy_uri": "sqlite:///" + path}, h)["id"]
ds = call("POST", "/api/v1/dataset/", {"database": db, "table_name": "sales"}, h)["id"]
dashes = [call("POST", "/api/v1/dashboard/", {"dashboard_title": f"Dash {i}", "published": True}, h)["id"] for i in range(20)]
for i in range(charts):
    call("POST", "/api/v1/chart/", {"slice_name": f"Chart {i}", "viz_type": "table", "datasource_id": ds,
                                     "datasource_type": "table", "params": "{}", "dashboards": [dashes[i % 20]]}, h)
open(token_file, "w").write(token)
PY
TOKEN="$(cat "$WORK/token")"
rss() { awk '/VmRSS/ {print $2 " kB"}' "/proc/$PID/status"; }
echo "catalog: $CHARTS charts, 20 dashboards, 1 dataset; RSS $(rss)"

run() {
    local name="$1"; shift
    echo "== $name"
    wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $TOKEN" "$@" \
        | grep -E 'Requests/sec|^ +(50|90|99)%|Non-2xx|Socket errors'
    echo "   server RSS after: $(rss)"
}
run "GET /api/v1/chart/ (page of 25, owners, dashboards, table, users)" "$BASE/api/v1/chart/?q=(page_size:25)"
run "GET /api/v1/chart/?q=(filters ct + order)" "$BASE/api/v1/chart/?q=(filters:!((col:slice_name,opr:ct,value:'Chart%201')),order_column:slice_name,order_direction:asc)"
run "GET /api/v1/chart/1" "$BASE/api/v1/chart/1"
run "GET /api/v1/dataset/1 (columns, metrics, database)" "$BASE/api/v1/dataset/1"
run "GET /api/v1/dashboard/ (page of 20)" "$BASE/api/v1/dashboard/"
