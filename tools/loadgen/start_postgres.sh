# shellcheck shell=bash
# Sourced by the load benchmarks: starts a PostgreSQL server of its own (Debian's binaries, default
# settings: fsync and synchronous_commit on) in the temporary directory $work, on a free port of
# 127.0.0.1 ($pg_port), as the user "postgres" when run as root ($as_pg runs its tools), and stops
# it with stop_postgres. Needs $work; sets $pg_bin, $pg_port, $as_pg.
work="${work:?start_postgres.sh: set work to a temporary directory before sourcing it}"
pg_bin="${METAOPT_POSTGRES_BIN:-$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -1)}"
as_pg=()
if [[ "$(id -u)" -eq 0 ]]; then
  chown postgres "$work"
  as_pg=(runuser -u postgres --)
fi

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_postgres() {
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
}

pg_port="$(free_port)"
"${as_pg[@]}" "$pg_bin/initdb" -D "$work/data" -U metaopt -A trust -E UTF8 >/dev/null
"${as_pg[@]}" "$pg_bin/pg_ctl" -D "$work/data" -l "$work/postgres.log" -w \
  -o "-p $pg_port -c listen_addresses=127.0.0.1 -c unix_socket_directories=" start >/dev/null
