# A throw-away PostgreSQL server for CI: its own data folder, 127.0.0.1 only, a free port.
# Sourced by .ci/run: start_postgres exports AUTOTUNE_TEST_PG, stop_postgres removes it all.
# Installs the Debian package when no server is there (needs root and apt-get).

pg_bin() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        [ -x "$dir/pg_ctl" ] && echo "$dir" && return 0
    done
    return 1
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

as_owner() {  # PostgreSQL refuses to run as root: run its tools as the postgres user then
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
    if ! pg_bin >/dev/null; then
        apt-get update -qq && APT_UPDATED=1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    fi
    local bin port
    bin=$(pg_bin)
    port=$(free_port)
    PG_DIR=$(mktemp -d /tmp/autotune-pg.XXXXXX)
    [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
    as_owner "$bin/initdb" -D "$PG_DIR/data" -U autotune --auth=trust >/dev/null
    as_owner "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w \
        -o "-c listen_addresses=127.0.0.1 -c port=$port -k $PG_DIR -c max_connections=100" start >/dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U autotune autotune_test
    export AUTOTUNE_TEST_PG="postgresql+psycopg://autotune@127.0.0.1:$port/autotune_test"
    PG_CTL="$bin/pg_ctl"
    echo "PostgreSQL on 127.0.0.1:$port ($PG_DIR): AUTOTUNE_TEST_PG=$AUTOTUNE_TEST_PG"
}

stop_postgres() {
    [ -n "${PG_DIR:-}" ] || return 0
    as_owner "$PG_CTL" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
}
