#!/usr/bin/env bash
# The entrypoint of localhost/insta-postgres:15 (scripts/container/postgres.Containerfile), the
# stand-in for the official postgres:15 image on hosts that can pull no image. It implements the
# subset of the official entrypoint's interface that deploy/compose.postgres.yaml uses:
#
#   - started as root: makes PGDATA and /var/run/postgresql the user postgres's, then runs the
#     rest as that user (setpriv; the official image uses gosu);
#   - POSTGRES_PASSWORD_FILE (read as root: the file may belong to another user), POSTGRES_USER
#     (default postgres), POSTGRES_DB (default POSTGRES_USER);
#   - an empty PGDATA: initdb with that superuser and password (scram-sha-256 for every
#     connection, the local socket too: never trust, unlike the official image), listening on all
#     addresses;
#     then a temporary server on the socket only (no TCP: nothing outside sees it half-made)
#     creates POSTGRES_DB when it is not `postgres` and runs /docker-entrypoint-initdb.d/*.sql in
#     name order with ON_ERROR_STOP, and stops; never again once PGDATA holds a cluster;
#   - then execs the command (`postgres -c ...`; arguments starting with '-' get `postgres` put
#     in front) as the user postgres, as PID 1: postgres itself handles SIGINT (fast shutdown),
#     SIGTERM (smart) and SIGQUIT.
set -Eeuo pipefail

if [ "${1:0:1}" = '-' ]; then set -- postgres "$@"; fi
# Not a server start (e.g. `psql ...`, `bash`): run it as given.
if [ "$1" != postgres ]; then exec "$@"; fi

: "${PGDATA:?PGDATA is not set}"
POSTGRES_USER="${POSTGRES_USER:-postgres}"
POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
# Before the server runs, the shell is PID 1: without a handler it would ignore these.
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$(id -u)" != 0 ]; then
    echo "docker-entrypoint.sh: start as root (it prepares PGDATA, then runs postgres as the user postgres)" >&2
    exit 1
fi
mkdir -p "$PGDATA" /var/run/postgresql
chown postgres:postgres "$PGDATA" /var/run/postgresql
chmod 0700 "$PGDATA"
chmod 2775 /var/run/postgresql

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    [ -n "${POSTGRES_PASSWORD_FILE:-}" ] || { echo "docker-entrypoint.sh: POSTGRES_PASSWORD_FILE is required (no password, no cluster)" >&2; exit 1; }
    pwfile="$(mktemp /tmp/pwfile.XXXXXX)"
    # The first line of the file, as the official image reads it ($(< file) drops trailing newlines).
    printf '%s\n' "$(<"$POSTGRES_PASSWORD_FILE")" >"$pwfile"
    chown postgres:postgres "$pwfile"
    echo "docker-entrypoint.sh: initdb $PGDATA (superuser $POSTGRES_USER)"
    as_postgres initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
        --auth-local=scram-sha-256 --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    {
        echo
        echo "# docker-entrypoint.sh: every host may connect, with a password (scram-sha-256)"
        echo "host all all all scram-sha-256"
    } >>"$PGDATA/pg_hba.conf"
    echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"

    # The temporary server: the socket only.
    as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w -t 60 start >/dev/null
    # The password in psql's environment (readable only by the user postgres and root), never in argv.
    PGPASSWORD="$(<"$POSTGRES_PASSWORD_FILE")"
    export PGPASSWORD
    psql=(as_postgres psql -v ON_ERROR_STOP=1 --no-psqlrc --quiet --username "$POSTGRES_USER" --dbname postgres)
    if [ "$POSTGRES_DB" != postgres ]; then
        # On stdin: psql interpolates variables there, not in -c.
        echo 'CREATE DATABASE :"db";' | "${psql[@]}" --set db="$POSTGRES_DB"
    fi
    for f in /docker-entrypoint-initdb.d/*; do
        [ -e "$f" ] || continue
        case "$f" in
            *.sql) echo "docker-entrypoint.sh: running $f"; "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
            *) echo "docker-entrypoint.sh: ignoring $f (only *.sql is supported here)" ;;
        esac
    done
    as_postgres pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    unset PGPASSWORD
    echo "docker-entrypoint.sh: PostgreSQL init process complete; ready for start up"
else
    echo "docker-entrypoint.sh: $PGDATA holds a cluster; skipping initialization"
fi

trap - INT TERM
exec setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
