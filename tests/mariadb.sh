# Sourced by tests/run right after tests/pg.sh: finds (or installs) MariaDB, starts a throwaway
# server in a temp dir on a free loopback port, creates the test users and exports
#   LITESET_TEST_MYSQL_URL        a BI reader (SELECT, SHOW VIEW on liteset_test), password
#                                 with special characters;
#   LITESET_TEST_MYSQL_FILE_URL   a user that also has FILE and DML/DDL on liteset_test, to
#                                 prove Liteset's own checks hold where privileges would not;
#   LITESET_TEST_MYSQL_ADMIN_URL  all privileges, for fixtures and the process list.
# Stops it and removes the dir when the sourcing script exits (pg.sh's `at_exit`).
# shellcheck shell=bash

if ! command -v mariadbd >/dev/null 2>&1 && [[ ! -x /usr/sbin/mariadbd ]]; then
    if [[ "$(id -u)" -ne 0 ]]; then
        log "mariadbd not found and not root: install MariaDB (Debian: apt-get install mariadb-server)"
        exit 1
    fi
    log "mariadbd not found: installing Debian's mariadb-server package"
    export DEBIAN_FRONTEND=noninteractive
    [[ -n "${APT_UPDATED:-}" ]] || apt-get update -qq
    APT_UPDATED=1
    # The package's own service is not wanted: the tests start their own server.
    apt-get install -y -qq mariadb-server mariadb-client >/dev/null
fi
MY_BIN="$(command -v mariadbd || echo /usr/sbin/mariadbd)"

MY_TMP="$(mktemp -d /tmp/liteset-my.XXXXXX)"
mkdir -p "$MY_TMP/data" "$MY_TMP/files"
my_stop() {
    local pid
    pid="$(cat "$MY_TMP/pid" 2>/dev/null || true)"
    if [[ -n "$pid" ]]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -rf "$MY_TMP"
}
at_exit my_stop

my_started_ms=$(date +%s%3N)
mariadb-install-db --no-defaults --datadir="$MY_TMP/data" --user=root --auth-root-authentication-method=socket \
    >"$MY_TMP/install.log" 2>&1 || { cat "$MY_TMP/install.log" >&2; exit 1; }

MY_PORT=""
for _ in 1 2 3 4 5; do
    port="$(free_port)"
    "$MY_BIN" --no-defaults --datadir="$MY_TMP/data" --port="$port" --socket="$MY_TMP/sock" \
        --bind-address=127.0.0.1 --user=root --pid-file="$MY_TMP/pid" --log-error="$MY_TMP/err.log" \
        --secure-file-priv="$MY_TMP/files" --innodb-flush-log-at-trx-commit=0 --skip-log-bin \
        --max-connections=300 >/dev/null 2>&1 &
    for _ in $(seq 1 100); do
        if mariadb --no-defaults --socket="$MY_TMP/sock" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
            MY_PORT="$port"
            break 2
        fi
        kill -0 $! 2>/dev/null || break
        sleep 0.1
    done
done
if [[ -z "$MY_PORT" ]]; then
    log "could not start MariaDB; its log:"
    cat "$MY_TMP/err.log" >&2 || true
    exit 1
fi
watch_server "$(cat "$MY_TMP/pid")" "$MY_TMP"

# Passwords with characters that need percent-encoding in a URI (and quoting in SQL).
mariadb --no-defaults --socket="$MY_TMP/sock" -uroot <<'SQL'
-- install-db's `test` database is open to every user: not part of these tests.
DROP DATABASE IF EXISTS test;
DELETE FROM mysql.db WHERE Db LIKE 'test%';
FLUSH PRIVILEGES;
CREATE DATABASE liteset_test CHARACTER SET utf8mb4;
CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'r3@d:er/p#ss%';
GRANT SELECT, SHOW VIEW ON liteset_test.* TO 'reader'@'127.0.0.1';
CREATE USER 'filer'@'127.0.0.1' IDENTIFIED BY 'f1!e@r';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, CREATE TEMPORARY TABLES, LOCK TABLES
    ON liteset_test.* TO 'filer'@'127.0.0.1';
GRANT FILE ON *.* TO 'filer'@'127.0.0.1';
CREATE USER 'admin'@'127.0.0.1' IDENTIFIED BY 'adm1n';
GRANT ALL PRIVILEGES ON *.* TO 'admin'@'127.0.0.1' WITH GRANT OPTION;
SQL
export LITESET_TEST_MYSQL_URL="mysql://reader:r3%40d%3Aer%2Fp%23ss%25@127.0.0.1:$MY_PORT/liteset_test"
export LITESET_TEST_MYSQL_FILE_URL="mysql://filer:f1%21e%40r@127.0.0.1:$MY_PORT/liteset_test"
export LITESET_TEST_MYSQL_ADMIN_URL="mysql://admin:adm1n@127.0.0.1:$MY_PORT/liteset_test"
export LITESET_TEST_MYSQL_FILES_DIR="$MY_TMP/files"
log "MariaDB $("$MY_BIN" --version | awk '{print $3}') up on 127.0.0.1:$MY_PORT after $(( $(date +%s%3N) - my_started_ms )) ms"
