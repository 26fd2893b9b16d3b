#!/usr/bin/env bash
# Private, local PostgreSQL 15 cluster for development, tests and CI.
#
# One cluster, one database per bounded context, one login role per service
# (Shared/README.md, "Databases"). It listens on 127.0.0.1 only, on its
# own port, without Unix sockets, so it never collides with a system server.
# Run `deploy/local/postgres.sh --help` for the commands.
set -euo pipefail
# Keep -e inside $(...) too, so a failing helper cannot yield an empty value.
shopt -s inherit_errexit

usage() {
    cat <<'EOF'
Usage: deploy/local/postgres.sh COMMAND [ARGS]

Manages a private PostgreSQL 15 cluster for development, tests and CI.

Commands:
  start            create the cluster, roles and databases if missing, start the
                   server if stopped, then print one URL per service (idempotent)
  stop             fast shutdown; succeeds when the server was not running
  status           print running/stopped, port and data dir; exit 0 if running, 3 if not
  url SERVICE      print the postgres:// URL of one service; SERVICE is one of
                   submission distribution federation verification testresult
                   portal datadonation efgs test (test = role en_test, database postgres)
  env              print `export POSTGRES_*=...` lines for the test suite:
                   eval "$(deploy/local/postgres.sh env)"
  psql [ARGS]      run psql as the superuser against the cluster
  help             this text

Environment:
  EN_DATA_DIR          data area (default: <repo>/.data); the cluster lives in
                       $EN_DATA_DIR/postgres, passwords in $EN_DATA_DIR/secrets,
                       the server log in $EN_DATA_DIR/postgres.log
  EN_PG_PORT           TCP port on 127.0.0.1 (default: 54329)
  EN_PG_BIN            PostgreSQL binaries (default: /usr/lib/postgresql/15/bin;
                       with the default, missing packages are installed via apt-get)
  EN_PG_OS_USER        when run as root: OS user that owns and runs the cluster
                       (default: postgres if it exists, else a system user enpg,
                       created when missing)
  EN_PG_START_TIMEOUT  seconds to wait for the server to accept connections (default: 30)

Passwords are generated once (CSPRNG) and are printed only inside the URLs of
`start`, `url` and `env`.
EOF
}

# ---------------------------------------------------------------- configuration

# Resolve through a symlinked script so the repo root is right from any cwd.
SCRIPT_PATH=$(readlink -f -- "${BASH_SOURCE[0]}")
ROOT=$(cd -- "$(dirname -- "$SCRIPT_PATH")/../.." && pwd -P)
# shellcheck source=SCRIPTDIR/lib.sh
. "$ROOT/deploy/local/lib.sh"

DATA_AREA=${EN_DATA_DIR:-$ROOT/.data}
[[ $DATA_AREA == /* ]] || DATA_AREA=$PWD/$DATA_AREA
LINK=$DATA_AREA/postgres       # the cluster, or a symlink to it (see init_cluster)
SECRETS=$DATA_AREA/secrets
LOG=$DATA_AREA/postgres.log
LOCK=$DATA_AREA/.postgres.lock

DEFAULT_PG_BIN=/usr/lib/postgresql/15/bin
PG_BIN=${EN_PG_BIN:-$DEFAULT_PG_BIN}
PORT=${EN_PG_PORT:-54329}
START_TIMEOUT=${EN_PG_START_TIMEOUT:-30}
HOST=127.0.0.1

SERVICES="submission distribution federation verification testresult portal datadonation test"
ROLES="submission distribution federation verification testresult portal datadonation efgs en_test"

# The script addresses its own cluster explicitly; inherited libpq/server
# variables (a developer's PGHOST, PGSSLMODE=require, PGDATA ...) must not redirect it.
unset PGHOST PGHOSTADDR PGPORT PGUSER PGDATABASE PGPASSWORD PGSERVICE PGSERVICEFILE \
      PGOPTIONS PGSSLMODE PGREQUIRESSL PGDATA PGTARGETSESSIONATTRS

CLUSTER=""      # real directory of the cluster (after resolve_cluster)
RUN_USER=""     # OS user that owns and runs the cluster (after pick_run_user)
TMP_DIR=""      # removed on exit (holds the initdb password file)
trap 'if [[ -n $TMP_DIR ]]; then rm -rf -- "$TMP_DIR"; fi' EXIT

# ---------------------------------------------------------------- helpers
# say, fail, fail_with_log, is_root, install_packages, port_open and wait_for come from deploy/local/lib.sh; say
# writes to stderr, so that stdout stays the list of URLs.
# fail_with_log "$LOG" shows the end of the server log, which is where PostgreSQL explains itself.

# Run a command as the cluster's OS user. PostgreSQL refuses to run as root, and
# cd / keeps the child from tripping over a cwd (e.g. under /root) it cannot read.
as_pg() {
    if is_root; then
        (cd / && runuser -u "$RUN_USER" -- "$@")
    else
        "$@"
    fi
}

# Run a client binary as the superuser. The password travels in the environment,
# never on a command line where `ps` would show it.
as_superuser() {
    local port=$1 pw
    shift
    pw=$(read_secret postgres) || exit 1
    PGPASSWORD=$pw PGHOST=$HOST PGPORT=$port PGUSER=postgres \
        PGDATABASE=postgres PGSSLMODE=disable PGCONNECT_TIMEOUT=10 "$@"
}

validate_port() {
    if ! [[ $PORT =~ ^[0-9]+$ ]] || (( PORT < 1024 || PORT > 65535 )); then
        fail "EN_PG_PORT must be a port number between 1024 and 65535, not '$PORT'"
    fi
    [[ $START_TIMEOUT =~ ^[0-9]+$ ]] || fail "EN_PG_START_TIMEOUT must be whole seconds"
}

# Only one start/stop per data area at a time (parallel CI steps, two terminals).
take_lock() {
    command -v flock >/dev/null || return 0
    exec 9>>"$LOCK"
    flock -w 120 9 || fail "another postgres.sh start/stop holds $LOCK"
}

# ---------------------------------------------------------------- binaries

require_binaries() {
    local b
    if [[ ! -x $PG_BIN/initdb ]]; then
        [[ $PG_BIN == "$DEFAULT_PG_BIN" ]] || fail "no initdb in EN_PG_BIN=$PG_BIN"
        say "PostgreSQL 15 is not in $PG_BIN (or set EN_PG_BIN)"
        install_packages postgresql-15 postgresql-client-15
    fi
    for b in initdb pg_ctl pg_isready psql; do
        [[ -x $PG_BIN/$b ]] || fail "$PG_BIN/$b is missing (packages postgresql-15, postgresql-client-15 provide it)"
    done
}

# ---------------------------------------------------------------- secrets

new_password() {
    if command -v openssl >/dev/null; then
        openssl rand -hex 16
    else
        od -An -N16 -tx1 /dev/urandom | tr -d ' \n'
    fi
}

# Generate each missing password once; existing ones are kept forever, so
# URLs stay valid across restarts.
ensure_secrets() {
    local role f
    (umask 077 && mkdir -p -- "$SECRETS")
    chmod 700 -- "$SECRETS"
    for role in postgres $ROLES; do
        f=$SECRETS/$role
        if [[ ! -s $f ]]; then
            (umask 077 && new_password >"$f.tmp" && mv -f -- "$f.tmp" "$f")
        fi
        chmod 600 -- "$f"
    done
}

# Passwords go into URLs and SQL literals unescaped, so accept only safe characters.
# Callers write `pw=$(read_secret r) || exit 1`: bash ignores -e inside functions
# run from an `if` condition, and an empty password would clear the role's one.
read_secret() {
    local f=$SECRETS/$1 pw
    if [[ -d $SECRETS && ! ( -r $SECRETS && -x $SECRETS ) ]]; then
        fail "cannot read $SECRETS (owner: $(stat -c %U -- "$SECRETS")): run this as that user or root"
    fi
    [[ -e $f ]] || fail "no password for role $1 in $SECRETS: run 'deploy/local/postgres.sh start' first"
    [[ -r $f ]] || fail "cannot read $f (owner: $(stat -c %U -- "$f")): run this as that user or root"
    pw=$(<"$f")
    [[ $pw =~ ^[A-Za-z0-9_-]+$ ]] || fail "$f must hold only letters, digits, '_' or '-'"
    printf '%s' "$pw"
}

# ---------------------------------------------------------------- cluster location

# Sets CLUSTER to the real cluster directory: $LINK itself, or the target of the
# symlink that init_cluster leaves when the cluster had to live elsewhere.
resolve_cluster() {
    CLUSTER=$LINK
    if [[ -L $LINK ]]; then
        CLUSTER=$(readlink -- "$LINK")
    fi
}

is_initialized() { [[ -f $CLUSTER/PG_VERSION ]]; }

# A non-root caller cannot look into a cluster that root set up for another user;
# say so instead of misreporting it as stopped.
require_access() {
    if [[ -e $CLUSTER && ! ( -r $CLUSTER && -x $CLUSTER ) ]]; then
        fail "$CLUSTER belongs to $(stat -c %U -- "$CLUSTER"): run this as root or as that user"
    fi
}

describe_dir() {
    if [[ $CLUSTER == "$LINK" ]]; then printf '%s' "$LINK"; else printf '%s -> %s' "$LINK" "$CLUSTER"; fi
}

# The postmaster's pid, if it is alive. postmaster.pid can outlive a crash or a
# reboot and its pid be reused by something else, so check the process name too;
# and a killed postmaster can linger as a zombie where PID 1 reaps lazily.
server_pid() {
    local pidfile=$CLUSTER/postmaster.pid pid comm stat
    [[ -r $pidfile ]] || return 1
    pid=$(head -n 1 -- "$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    kill -0 "$pid" 2>/dev/null || [[ -d /proc/$pid ]] || return 1
    if [[ -r /proc/$pid/stat ]]; then
        comm=$(<"/proc/$pid/comm")
        [[ $comm == postgres || $comm == postmaster ]] || return 1
        stat=$(<"/proc/$pid/stat")
        stat=${stat##*) }              # fields after "(comm) ": state first
        [[ ${stat%% *} != Z ]] || return 1
    fi
    printf '%s\n' "$pid"
}

# Port of the running server (line 4 of postmaster.pid).
server_port() { sed -n 4p -- "$CLUSTER/postmaster.pid"; }

# The port clients should use: the running server's, else the configured one.
effective_port() {
    resolve_cluster
    if [[ -r $CLUSTER ]] && server_pid >/dev/null; then server_port; else printf '%s\n' "$PORT"; fi
}

# ---------------------------------------------------------------- OS user (root only)

ensure_os_user() {
    local user=$1
    id -u "$user" >/dev/null 2>&1 && return 0
    say "creating system user $user to run PostgreSQL (it refuses to run as root)"
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin "$user" || fail "could not create system user $user"
}

# Sets RUN_USER. An existing cluster keeps the owner it has (postgres checks it);
# a new one gets EN_PG_OS_USER, else postgres, else enpg.
pick_run_user() {
    local owner
    if ! is_root; then
        RUN_USER=$(id -un)
        return
    fi
    if is_initialized; then
        owner=$(stat -c %U -- "$CLUSTER")
        [[ $owner != root && $owner != UNKNOWN ]] \
            || fail "$CLUSTER is owned by $owner; PostgreSQL cannot run as that. Remove it and start again"
        RUN_USER=$owner
        return
    fi
    if [[ -n ${EN_PG_OS_USER:-} ]]; then
        RUN_USER=$EN_PG_OS_USER
    elif id -u postgres >/dev/null 2>&1; then
        RUN_USER=postgres
    else
        RUN_USER=enpg
    fi
    [[ $RUN_USER != root ]] || fail "EN_PG_OS_USER must not be root"
    ensure_os_user "$RUN_USER"
}

# ---------------------------------------------------------------- initdb

# Where a new cluster goes. Normally $LINK; but when the OS user cannot traverse
# the data area (a clone under /root, mode 700), a directory it can reach, keyed
# by a hash of the data area path so that clones and EN_DATA_DIRs do not collide.
choose_cluster_dir() {
    local hash
    if is_root && ! as_pg test -x "$DATA_AREA"; then
        hash=$(printf '%s' "$(cd -- "$DATA_AREA" && pwd -P)" | sha256sum | cut -c1-12)
        printf '/var/tmp/en-postgres-%s\n' "$hash"
    else
        printf '%s\n' "$LINK"
    fi
}

# Make an empty directory, owned by RUN_USER with mode 700, for initdb. A leftover
# cluster there (its data area was deleted, taking the passwords) is useless: drop it.
prepare_cluster_dir() {
    local dir=$1
    if [[ -L $dir ]]; then
        fail "$dir is a symlink; refusing to put a cluster there"
    elif [[ -f $dir/PG_VERSION && $dir != "$LINK" ]]; then
        say "removing orphaned cluster $dir (its data area and passwords are gone)"
        as_pg "$PG_BIN/pg_ctl" stop -D "$dir" -m immediate >/dev/null 2>&1 9>&- || true
        rm -rf -- "$dir"
    elif [[ -d $dir && -n $(ls -A -- "$dir") ]]; then
        fail "$dir exists, is not empty and is not a PostgreSQL cluster: move it away"
    fi
    mkdir -p -- "$dir"
    if is_root; then
        chown "$RUN_USER:" -- "$dir"
    fi
    chmod 700 -- "$dir"
}

# initdb reads the superuser password from a file; it must be one RUN_USER can
# read, so copy it into a private temp dir handed to that user (removed on exit).
run_initdb() {
    local dir=$1
    TMP_DIR=$(mktemp -d /tmp/en-pg-init.XXXXXX)
    (umask 077 && read_secret postgres >"$TMP_DIR/pw")
    if is_root; then
        chown -R "$RUN_USER:" -- "$TMP_DIR"
    fi
    # --no-sync: a dev cluster lost to a crash right after creation is simply re-created.
    if ! as_pg "$PG_BIN/initdb" -D "$dir" -U postgres --pwfile="$TMP_DIR/pw" \
            --auth=scram-sha-256 --encoding=UTF8 --locale=C --no-sync --no-instructions \
            >>"$LOG" 2>&1 9>&-; then
        fail_with_log "$LOG" "initdb failed for $dir"
    fi
    rm -rf -- "$TMP_DIR"
    TMP_DIR=""
}

# TCP on 127.0.0.1 only, no Unix sockets (so no clash with a system server's
# /var/run/postgresql), password authentication for everyone, no trust.
write_config() {
    local dir=$1
    as_pg tee -a "$dir/postgresql.conf" >/dev/null <<EOF

# ---- set by deploy/local/postgres.sh (the port is also passed on each start) ----
listen_addresses = '$HOST'
port = $PORT
unix_socket_directories = ''
password_encryption = 'scram-sha-256'
max_connections = 400
EOF
    as_pg tee "$dir/pg_hba.conf" >/dev/null <<EOF
# Written by deploy/local/postgres.sh: TCP from 127.0.0.1 only, SCRAM passwords only.
# TYPE  DATABASE  USER  ADDRESS       METHOD
host    all       all   127.0.0.1/32  scram-sha-256
EOF
}

init_cluster() {
    local dir
    dir=$(choose_cluster_dir)
    # A dangling symlink (its target was cleaned from /var/tmp) is replaced.
    if [[ -L $LINK ]]; then
        say "$LINK points to a missing cluster; creating a new one"
        rm -f -- "$LINK"
    fi
    if [[ $dir != "$LINK" ]]; then
        say "$RUN_USER cannot traverse $DATA_AREA; the cluster lives in $dir (symlinked from $LINK)"
    fi
    prepare_cluster_dir "$dir"
    say "initializing a PostgreSQL 15 cluster in $dir (OS user $RUN_USER)"
    run_initdb "$dir"
    write_config "$dir"
    if [[ $dir != "$LINK" ]]; then
        ln -s -- "$dir" "$LINK"
    fi
    CLUSTER=$dir
}

# ---------------------------------------------------------------- start / stop

# If anything already listens on the port, our postmaster could not bind, and
# pg_isready could be fooled by another server (or hang on a non-PostgreSQL one):
# refuse early and clearly. Bash's /dev/tcp gives an instant yes/no.
check_port_free() {
    if port_open "$PORT" "$HOST"; then
        if "$PG_BIN/pg_isready" -q -h "$HOST" -p "$PORT" -t 2; then
            fail "another PostgreSQL server already listens on $HOST:$PORT; stop it or set EN_PG_PORT"
        fi
        fail "port $HOST:$PORT is already in use by another program; set EN_PG_PORT to a free port"
    fi
}

# postmaster.pid appears within milliseconds and vanishes when the server gives up
# (port taken, bad config), so its absence after a second or two means failure.
server_starting() { (( SECONDS < START_GRACE_END )) || server_pid >/dev/null; }

wait_until_ready() {
    START_GRACE_END=$((SECONDS + 2))
    wait_for --alive server_starting --log "$LOG" "$START_TIMEOUT" "PostgreSQL on $HOST:$PORT" \
        "$PG_BIN/pg_isready" -q -h "$HOST" -p "$PORT" -t 2
}

start_server() {
    check_port_free
    as_pg test -r "$CLUSTER/PG_VERSION" \
        || fail "OS user $RUN_USER cannot read $CLUSTER (was the data area moved under a private directory?)"
    # A postmaster.pid left by a crash or reboot, whose pid now belongs to another
    # process, would make postgres refuse to start ("lock file already exists").
    if [[ -f $CLUSTER/postmaster.pid ]]; then
        say "removing stale $CLUSTER/postmaster.pid"
        as_pg rm -f -- "$CLUSTER/postmaster.pid"
    fi
    say "starting PostgreSQL on $HOST:$PORT ($(describe_dir))"
    # The log is opened here (by the caller), so it can sit in a directory the OS
    # user cannot reach. fd 9 (the lock) must not leak into the long-lived server.
    printf '\n==== %s start (port %s) ====\n' "$(date -u +%FT%TZ)" "$PORT" >>"$LOG"
    # fsync=off: this cluster is for development and tests, never for data that must survive an OS crash (a
    # PostgreSQL crash loses nothing; an OS crash can corrupt it: re-create it). With fsync on, a checkpoint after the
    # suite's hundreds of CREATE/DROP DATABASE syncs tens of thousands of files for about half a minute, and
    # connection attempts time out behind it. Passed on each start rather than written to postgresql.conf, so every
    # existing cluster runs with it.
    as_pg "$PG_BIN/pg_ctl" start -W -D "$CLUSTER" -o "-p $PORT -c fsync=off" >>"$LOG" 2>&1 9>&- \
        || fail_with_log "$LOG" "pg_ctl start failed"
    wait_until_ready
}

# Create what is missing and re-assert attributes, ownership and passwords, so the
# cluster always matches the secrets files: deploy/postgres/init.sh, which prepares
# the containers' PostgreSQL too, with every role's password (through the
# environment, as init.sh hands them to psql) and the test suite's role en_test.
sync_roles() {
    local role pw err
    local -a passwords=()
    for role in $ROLES; do
        pw=$(read_secret "$role") || exit 1
        passwords+=("${role^^}_DB_PASSWORD=$pw")
    done
    if ! err=$(export "${passwords[@]}" POSTGRES_USER=postgres POSTGRES_DB=postgres PATH="$PG_BIN:$PATH"
               as_superuser "$PORT" bash "$ROOT/deploy/postgres/init.sh" 2>&1 >/dev/null); then
        # psql echoes the failing statement; keep passwords out of the terminal.
        err=$(printf '%s\n' "$err" | sed -E "s/PASSWORD '[^']*'/PASSWORD '***'/g")
        fail "could not create roles/databases with deploy/postgres/init.sh as superuser postgres:
$err"
    fi
}

# ---------------------------------------------------------------- URLs

service_role() {
    case $1 in
        test) echo en_test ;;
        submission|distribution|federation|verification|testresult|portal|datadonation|efgs) echo "$1" ;;
        *) return 1 ;;
    esac
}

service_db() {
    case $1 in
        submission|distribution|federation) echo keys ;;
        test) echo postgres ;;
        *) echo "$1" ;;
    esac
}

service_url() {
    local svc=$1 port=$2 role pw
    role=$(service_role "$svc")
    pw=$(read_secret "$role") || exit 1
    printf 'postgres://%s:%s@%s:%s/%s\n' "$role" "$pw" "$HOST" "$port" "$(service_db "$svc")"
}

# ---------------------------------------------------------------- commands

cmd_start() {
    local svc url running_port
    validate_port
    require_binaries
    (umask 022 && mkdir -p -- "$DATA_AREA")
    take_lock
    (umask 077 && touch -- "$LOG")
    chmod 600 -- "$LOG"   # failed statements are logged, and may carry a password
    ensure_secrets
    resolve_cluster
    require_access
    pick_run_user
    if ! is_initialized; then
        init_cluster
    fi
    if server_pid >/dev/null; then
        running_port=$(server_port)
        [[ $running_port == "$PORT" ]] \
            || fail "the cluster already runs on port $running_port, not $PORT: run 'stop' first"
        # Running but maybe still in recovery after a restart by someone else.
        wait_until_ready
    else
        start_server
    fi
    sync_roles
    say "PostgreSQL 15 ready on $HOST:$PORT ($(describe_dir)); log: $LOG"
    for svc in $SERVICES; do
        url=$(service_url "$svc" "$PORT")
        printf '%-13s %s\n' "$svc" "$url"
    done
}

cmd_stop() {
    resolve_cluster
    require_access
    if ! is_initialized || ! server_pid >/dev/null; then
        say "not running ($(describe_dir))"
        return 0
    fi
    [[ -x $PG_BIN/pg_ctl ]] || fail "$PG_BIN/pg_ctl is missing"
    take_lock
    pick_run_user
    as_pg "$PG_BIN/pg_ctl" stop -D "$CLUSTER" -m fast -w -t 60 >>"$LOG" 2>&1 9>&- \
        || fail_with_log "$LOG" "pg_ctl stop failed"
    say "stopped ($(describe_dir))"
}

cmd_status() {
    local pid port
    resolve_cluster
    require_access
    if is_initialized && pid=$(server_pid); then
        port=$(server_port)
        if [[ -x $PG_BIN/pg_isready ]] && ! "$PG_BIN/pg_isready" -q -h "$HOST" -p "$port" -t 2; then
            echo "running (pid $pid, not accepting connections yet) on $HOST:$port, data dir $(describe_dir)"
        else
            echo "running (pid $pid) on $HOST:$port, data dir $(describe_dir)"
        fi
        return 0
    fi
    if is_initialized; then
        echo "stopped (port $PORT), data dir $(describe_dir)"
    else
        echo "stopped (port $PORT), no cluster yet in $LINK (run: deploy/local/postgres.sh start)"
    fi
    exit 3
}

cmd_url() {
    local svc=${1:-} port
    if [[ -z $svc ]] || ! service_role "$svc" >/dev/null; then
        say "unknown service '${svc}'; expected one of: $SERVICES"
        exit 2
    fi
    port=$(effective_port)
    service_url "$svc" "$port"
}

cmd_env() {
    local pw port
    pw=$(read_secret en_test) || exit 1
    port=$(effective_port)
    printf 'export POSTGRES_HOST=%s\n' "$HOST"
    printf 'export POSTGRES_PORT=%s\n' "$port"
    printf 'export POSTGRES_USER=%s\n' en_test
    printf 'export POSTGRES_PASSWORD=%s\n' "$pw"
    printf 'export POSTGRES_DATABASE=%s\n' postgres
}

cmd_psql() {
    local pw port
    [[ -x $PG_BIN/psql ]] || fail "$PG_BIN/psql is missing: run 'deploy/local/postgres.sh start' first"
    pw=$(read_secret postgres) || exit 1
    port=$(effective_port)
    # libpq variables rather than -h/-d options, so that the caller's own
    # arguments (e.g. a database name) take precedence.
    PGPASSWORD=$pw PGHOST=$HOST PGPORT=$port PGUSER=postgres \
        PGDATABASE=postgres PGSSLMODE=disable exec "$PG_BIN/psql" "$@"
}

main() {
    local cmd=${1:-}
    if (( $# > 0 )); then shift; fi
    case $cmd in
        start)  [[ $# -eq 0 ]] || { usage >&2; exit 2; }; cmd_start ;;
        stop)   [[ $# -eq 0 ]] || { usage >&2; exit 2; }; cmd_stop ;;
        status) [[ $# -eq 0 ]] || { usage >&2; exit 2; }; cmd_status ;;
        url)    [[ $# -le 1 ]] || { usage >&2; exit 2; }; cmd_url "$@" ;;
        env)    [[ $# -eq 0 ]] || { usage >&2; exit 2; }; cmd_env ;;
        psql)   cmd_psql "$@" ;;
        help|-h|--help) usage ;;
        "")     usage >&2; exit 2 ;;
        *)      say "unknown command '$cmd'"; usage >&2; exit 2 ;;
    esac
}

main "$@"
