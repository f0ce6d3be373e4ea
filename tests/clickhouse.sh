# Sourced by tests/run right after tests/pg.sh: finds (or installs) ClickHouse, starts a
# throwaway server on free loopback ports in a temp dir, exports LITESET_TEST_CLICKHOUSE_URL
# (user `default`, no password) and stops and removes it when the sourcing script exits
# (pg.sh's `at_exit`). Expects `log`, `at_exit` and `free_port` (pg.sh) to be defined.
# The harness in tests/src/clickhouse.rs writes the same configuration when the variable is
# unset (and for its two-server cluster); keep the two in step.
# shellcheck shell=bash

if ! command -v clickhouse-server >/dev/null 2>&1 && [[ ! -x /usr/sbin/clickhouse-server ]]; then
    if [[ "$(id -u)" -ne 0 ]]; then
        log "clickhouse-server not found and not root: install it (Debian: apt-get install clickhouse-server)"
        exit 1
    fi
    log "clickhouse-server not found: installing Debian's clickhouse-server package"
    export DEBIAN_FRONTEND=noninteractive
    [[ -n "${APT_UPDATED:-}" ]] || apt-get update -qq
    APT_UPDATED=1
    apt-get install -y -qq clickhouse-server >/dev/null
fi
CH_BIN="$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)"

CH_TMP="$(mktemp -d "${TMPDIR:-/tmp}/liteset-ch.XXXXXX")"
mkdir -p "$CH_TMP/data" "$CH_TMP/tmp" "$CH_TMP/user_files"

# Users: `default` without a password (the tests' admin) and `liteset` with one, so tests see
# ClickHouse's own authentication failures.
cat >"$CH_TMP/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile><quota>default</quota>
        </default>
        <liteset>
            <password>ch-secret-pw</password>
            <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
            <profile>default</profile><quota>default</quota>
        </liteset>
    </users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
    </interval></default></quotas>
</yandex>
EOF

ch_config() { # http_port tcp_port
    cat >"$CH_TMP/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <logger><level>information</level><log>$CH_TMP/ch.log</log><errorlog>$CH_TMP/err.log</errorlog></logger>
    <listen_host>127.0.0.1</listen_host>
    <http_port>$1</http_port>
    <tcp_port>$2</tcp_port>
    <path>$CH_TMP/data/</path>
    <tmp_path>$CH_TMP/tmp/</tmp_path>
    <user_files_path>$CH_TMP/user_files/</user_files_path>
    <users_config>$CH_TMP/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
EOF
}

started_ms=$(date +%s%3N)
CH_PID=""
for _ in 1 2 3 4 5; do
    CH_HTTP_PORT="$(free_port)"
    CH_TCP_PORT="$(free_port)"
    ch_config "$CH_HTTP_PORT" "$CH_TCP_PORT"
    "$CH_BIN" --config-file="$CH_TMP/config.xml" >"$CH_TMP/stdout.log" 2>&1 &
    CH_PID=$!
    for _ in $(seq 1 150); do
        if curl -fsS "http://127.0.0.1:$CH_HTTP_PORT/" --data-binary 'SELECT 1' >/dev/null 2>&1; then
            break 2
        fi
        kill -0 "$CH_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill "$CH_PID" 2>/dev/null || true
    wait "$CH_PID" 2>/dev/null || true
    CH_PID=""
done
if [[ -z "$CH_PID" ]]; then
    log "could not start ClickHouse; its logs:"
    cat "$CH_TMP/stdout.log" "$CH_TMP/err.log" >&2 2>/dev/null || true
    exit 1
fi
# Stopped by its pid (never by name), then its folder removed.
at_exit "kill $CH_PID 2>/dev/null; wait $CH_PID 2>/dev/null; rm -rf '$CH_TMP'"
watch_server "$CH_PID" "$CH_TMP"
export LITESET_TEST_CLICKHOUSE_URL="clickhousedb://default@127.0.0.1:$CH_HTTP_PORT/default"
log "ClickHouse $(curl -fsS "http://127.0.0.1:$CH_HTTP_PORT/" --data-binary 'SELECT version()') up at $LITESET_TEST_CLICKHOUSE_URL after $(( $(date +%s%3N) - started_ms )) ms"
