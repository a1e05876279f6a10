# Sourced by .ci/run (and by hand: `source .ci/postgres.sh`): installs
# PostgreSQL from Debian's packages if it is missing, starts a throwaway
# server on 127.0.0.1 for the tests, creates a database and exports
# BERTH_TEST_POSTGRES_URL, which the PostgreSQL udb driver's tests read. The
# server stops and its files go when the sourcing shell exits, unless
# BERTH_PG_KEEP is set. With BERTH_TEST_POSTGRES_URL already set, it does
# nothing.

berth_pg_start() {
	if [ -n "${BERTH_TEST_POSTGRES_URL:-}" ]; then
		echo "postgres: using BERTH_TEST_POSTGRES_URL from the environment"
		return 0
	fi
	local bin
	bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1) || true
	if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
		echo "postgres: installing PostgreSQL from Debian's packages"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
		bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	fi
	"$bin/postgres" --version

	# PostgreSQL refuses to run as root: run it as the postgres user (the
	# Debian package creates it) in a directory of its own.
	local run=() dir port
	dir=$(mktemp -d /tmp/berth-pg.XXXXXX)
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$dir"
		run=(runuser -u postgres --)
	fi
	port=${BERTH_PG_PORT:-55432}
	while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

	"${run[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 >"$dir/initdb.log" ||
		{ cat "$dir/initdb.log"; return 1; }
	# Test settings: no fsync (a crashed test server is thrown away), enough
	# connections for parallel test packages.
	"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
		"-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" >/dev/null ||
		{ cat "$dir/server.log"; return 1; }
	if [ -z "${BERTH_PG_KEEP:-}" ]; then
		trap "${run[*]} $bin/pg_ctl -D $dir/data -m fast -w stop >/dev/null 2>&1; rm -rf $dir" EXIT
	fi
	"${run[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres berth_test
	export BERTH_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/berth_test?sslmode=disable"
	echo "postgres: server on 127.0.0.1:$port (data in $dir); BERTH_TEST_POSTGRES_URL=$BERTH_TEST_POSTGRES_URL"
}

berth_pg_start
