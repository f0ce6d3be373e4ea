# Sourced by tests/run and the benchmarks: finds (or installs) PostgreSQL, starts a throwaway
# cluster in a temp dir, exports LITESET_TEST_PG_URL (superuser, trusted) and stops and removes
# the cluster when the sourcing script exits, however it exits. Expects `log` to be defined.
# shellcheck shell=bash

# --- find PostgreSQL ------------------------------------------------------------------------
find_pg_bin() {
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"
        return 0
    fi
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
        echo "$dir"
        return 0
    fi
    return 1
}

if ! PG_BIN="$(find_pg_bin)"; then
    if [[ "$(id -u)" -ne 0 ]]; then
        log "initdb/pg_ctl not found and not root: install PostgreSQL (Debian: apt-get install postgresql)"
        exit 1
    fi
    log "initdb/pg_ctl not found: installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    APT_UPDATED=1
    apt-get install -y -qq postgresql >/dev/null
    PG_BIN="$(find_pg_bin)" || { log "postgresql installed but initdb/pg_ctl still not found"; exit 1; }
fi
log "PostgreSQL binaries: $PG_BIN ($("$PG_BIN/pg_ctl" --version))"

# --- start an ephemeral cluster -------------------------------------------------------------
IS_ROOT=0
[[ "$(id -u)" -eq 0 ]] && IS_ROOT=1

if [[ $IS_ROOT -eq 1 ]]; then
    # PostgreSQL refuses to run as root. /tmp (not $TMPDIR) so the postgres user can reach it.
    id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    PG_TMP="$(mktemp -d /tmp/liteset-pg.XXXXXX)"
    chown postgres: "$PG_TMP"
else
    PG_TMP="$(mktemp -d "${TMPDIR:-/tmp}/liteset-pg.XXXXXX")"
fi
PG_DATA="$PG_TMP/data"

# Runs a PostgreSQL tool as the user that owns the cluster, from a directory that user can read.
as_pg() {
    if [[ $IS_ROOT -eq 1 ]]; then
        (cd "$PG_TMP" && runuser -u postgres -- "$@")
    else
        (cd "$PG_TMP" && "$@")
    fi
}

# Other servers the tests need (tests/clickhouse.sh, tests/mariadb.sh) register their stop
# commands here; one EXIT trap runs them all, newest first, then stops PostgreSQL.
EXIT_HOOKS=()
at_exit() { EXIT_HOOKS+=("$1"); }

# A shell killed outright (SIGKILL, or `pkill` of this script alone) runs no trap: a watchdog
# in its own session stops every server registered with `watch_server PID DIR` once this
# shell is gone, and removes their folders. A normal exit empties its list first.
WATCH_FILE="$(mktemp /tmp/liteset-watch.XXXXXX)"
watch_server() { printf '%s %s\n' "$1" "$2" >>"$WATCH_FILE"; }
setsid bash -c '
    while kill -0 "$1" 2>/dev/null; do sleep 2; done
    [ -f "$2" ] || exit 0
    while read -r pid dir; do
        kill "$pid" 2>/dev/null; sleep 2; kill -9 "$pid" 2>/dev/null
        [ -n "$dir" ] && rm -rf "$dir"
    done <"$2"
    rm -f "$2"' liteset-watchdog "$$" "$WATCH_FILE" </dev/null >/dev/null 2>&1 &

cleanup() {
    local status=$?
    local i
    rm -f "$WATCH_FILE"
    for ((i = ${#EXIT_HOOKS[@]} - 1; i >= 0; i--)); do
        eval "${EXIT_HOOKS[$i]}" || true
    done
    if [[ -f "$PG_DATA/postmaster.pid" ]]; then
        as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" stop -m immediate >/dev/null 2>&1 || true
    fi
    rm -rf "$PG_TMP"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started_ms=$(date +%s%3N)
if ! as_pg "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 \
    >"$PG_TMP/initdb.log" 2>&1; then
    log "initdb with --locale=C.UTF-8 failed; retrying with --locale=C"
    rm -rf "$PG_DATA"
    as_pg "$PG_BIN/initdb" -D "$PG_DATA" -A trust -U postgres --no-sync -E UTF8 --locale=C \
        >"$PG_TMP/initdb.log" 2>&1 || { cat "$PG_TMP/initdb.log" >&2; exit 1; }
fi

# The superuser is trusted; every other role must give its password, so tests see real
# authentication failures (wrong password) as users' databases report them.
cat >"$PG_DATA/pg_hba.conf" <<EOF
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
EOF

cat >>"$PG_DATA/postgresql.conf" <<EOF

# liteset tests: a throwaway cluster, so durability is traded for speed.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PG_TMP'
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 300
TimeZone = 'UTC'
EOF

free_port() {
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
    else
        echo $((20000 + RANDOM % 30000))
    fi
}

# The port is free when chosen but may be taken before postgres binds it, so try a few.
PG_PORT=""
for _ in 1 2 3 4 5; do
    port="$(free_port)"
    if as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_TMP/postgres.log" -o "-p $port" -w -t 60 start \
        >/dev/null 2>&1; then
        PG_PORT="$port"
        break
    fi
done
if [[ -z "$PG_PORT" ]]; then
    log "could not start PostgreSQL; its log:"
    cat "$PG_TMP/postgres.log" >&2 || true
    exit 1
fi
watch_server "$(head -1 "$PG_DATA/postmaster.pid")" "$PG_TMP"
export LITESET_TEST_PG_URL="postgresql://postgres@127.0.0.1:$PG_PORT/postgres"
log "PostgreSQL up at $LITESET_TEST_PG_URL after $(( $(date +%s%3N) - started_ms )) ms"

