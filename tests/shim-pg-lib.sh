# SPDX-License-Identifier: MIT
# Sourced by tests/shim-pg.sh and tests/shim-pg-shared.sh: PostgreSQL 15 on
# a scratch XFS loop image (skips with a reason where it cannot run), the
# server's start with and without the shim, its stop, and the consistency
# checks of a database after pgbench (see shim-pg.sh). VARIANT is $1.
# The server is always stopped, and the image removed, even on failure.
. "$(dirname "$0")/shim-lib.sh"
VARIANT=${1:-clean}
SECS=${PG_SECONDS:-30}
SCALE=${PG_SCALE:-10}
PGMODES=${PG_MODES:-$MODES}
PGBIN=/usr/lib/postgresql/15/bin
PGUSER_OS=postgres

for b in initdb pg_ctl postgres pgbench psql createdb; do
	[ -x "$PGBIN/$b" ] || skip "PostgreSQL 15 not installed ($PGBIN/$b; scripts/deps.sh installs postgresql)"
done
[ "$(id -u)" -eq 0 ] || skip "not root: cannot mount a loop image or run as $PGUSER_OS"
id "$PGUSER_OS" >/dev/null 2>&1 || skip "no $PGUSER_OS user"
command -v runuser >/dev/null || skip "runuser missing"
command -v mkfs.xfs >/dev/null || skip "mkfs.xfs missing (scripts/deps.sh installs xfsprogs)"
[ -e /dev/loop-control ] || skip "no loop devices"
# the server runs as postgres: it must reach the shim
runuser -u "$PGUSER_OS" -- test -r "$WTIO_PRELOAD" -a -x "$WTIO_RUN" ||
	skip "$PGUSER_OS cannot read $WTIO_PRELOAD or run $WTIO_RUN"

IMG=""
MNT=""
DATA=""
PORT=$((20000 + $$ % 20000))
cleanup() {
	if [ -n "$DATA" ] && [ -f "$DATA/postmaster.pid" ]; then
		runuser -u "$PGUSER_OS" -- "$PGBIN/pg_ctl" -D "$DATA" -m immediate \
			-w -t 30 stop >/dev/null 2>&1
	fi
	kill_server
	if [ -n "$MNT" ]; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null
		rmdir "$MNT" 2>/dev/null
	fi
	[ -n "$IMG" ] && rm -f "$IMG"
	rm -rf "$SHIM_TMP"
}
SERVER_PIDS=()
# every process of the server started last (collected while it runs)
collect_server() {
	local pm
	SERVER_PIDS=()
	[ -f "$DATA/postmaster.pid" ] || return 0
	pm=$(head -1 "$DATA/postmaster.pid")
	SERVER_PIDS=("$pm" $(ps -o pid= --ppid "$pm" 2>/dev/null))
}
kill_server() {
	local p
	for p in "${SERVER_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null
	done
	SERVER_PIDS=()
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

IMG=$(mktemp /dev/shm/wtio-pg.XXXXXX) || skip "no writable /dev/shm"
truncate -s 2G "$IMG"
# PG_FALLOCATE=1 (shim-pg-tps.sh): the image's memory allocated now, by
# this process, so that a memory cgroup around the server is not charged
# for the loop device's pages
if [ -n "${PG_FALLOCATE:-}" ]; then
	fallocate -l 2G "$IMG" || skip "cannot allocate the image in /dev/shm"
fi
mkfs.xfs -f -q "$IMG" >/dev/null 2>&1 || skip "mkfs.xfs failed"
MNT=$(mktemp -d /tmp/wtio-pg.XXXXXX)
mount -t xfs -o loop "$IMG" "$MNT" 2>/dev/null || { rmdir "$MNT"; MNT=""; skip "cannot mount an XFS loop image"; }
chown "$PGUSER_OS" "$MNT"
chmod 755 "$MNT"
SOCK=$MNT/sock
LOG=$MNT/log

pg() { runuser -u "$PGUSER_OS" -- "$@"; }
psql_q() { pg "$PGBIN/psql" -X -h "$SOCK" -p "$PORT" -d bench -v ON_ERROR_STOP=1 -qAt -c "$1"; }

start_plain() {
	pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG.plain" -w -t 300 \
		-o "-p $PORT -k $SOCK -c listen_addresses=''" start >/dev/null ||
		fail "$1: the restart without the shim failed: $(tail -20 "$LOG.plain")"
}
start_shim() {
	local mode=$1
	if [ "$VARIANT" = baseline ]; then
		pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG.shim" -w -t 300 \
			-o "-p $PORT -k $SOCK -c listen_addresses=''" start >/dev/null ||
			fail "baseline start failed"
		collect_server
		return
	fi
	pg "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$DATA" --cache-size=256M --debug -- \
		"$PGBIN/pg_ctl" -D "$DATA" -l "$LOG.shim" -w -t 300 \
		-o "-p $PORT -k $SOCK -c listen_addresses=''" start >/dev/null 2>&1 ||
		fail "$mode: start under the shim failed: $(tail -20 "$LOG.shim")"
	collect_server
	grep -q libwtio-preload "/proc/${SERVER_PIDS[0]}/maps" ||
		fail "$mode: the postmaster is not under the shim"
}
stop() {
	pg "$PGBIN/pg_ctl" -D "$DATA" -m fast -w -t 300 stop >/dev/null ||
		fail "$1: pg_ctl stop failed"
	SERVER_PIDS=()
}

checks() {
	local mode=$1 committed=$2 n dup sums hist idx bad
	n=$(psql_q "SELECT count(*) FROM pgbench_accounts") || fail "$mode: count"
	[ "$n" = $((SCALE * 100000)) ] ||
		fail "$mode: pgbench_accounts has $n rows, want $((SCALE * 100000))"
	dup=$(psql_q "SET enable_indexscan = off; SET enable_bitmapscan = off;
		SET enable_indexonlyscan = off;
		SELECT count(*) FROM (SELECT aid FROM pgbench_accounts
		GROUP BY aid HAVING count(*) > 1) d") || fail "$mode: dup query"
	[ "$dup" = 0 ] || fail "$mode: $dup aids with two live rows"
	sums=$(psql_q "SELECT (SELECT coalesce(sum(delta), 0) FROM pgbench_history)
		|| ' ' || (SELECT sum(abalance) FROM pgbench_accounts)
		|| ' ' || (SELECT sum(tbalance) FROM pgbench_tellers)
		|| ' ' || (SELECT sum(bbalance) FROM pgbench_branches)") ||
		fail "$mode: sums"
	set -- $sums
	[ "$1" = "$2" ] && [ "$1" = "$3" ] && [ "$1" = "$4" ] ||
		fail "$mode: sum(delta) $1, sum(abalance) $2, sum(tbalance) $3, sum(bbalance) $4"
	hist=$(psql_q "SELECT count(*) FROM pgbench_history") || fail "$mode: history"
	if [ -n "$committed" ] && [ "$hist" != "$committed" ]; then
		fail "$mode: pgbench committed $committed transactions, pgbench_history has $hist rows"
	fi
	psql_q "CREATE EXTENSION IF NOT EXISTS amcheck" >/dev/null ||
		fail "$mode: no amcheck extension"
	idx=$(psql_q "SELECT count(bt_index_check(index => c.oid, heapallindexed => true))
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		JOIN pg_am am ON am.oid = c.relam
		WHERE am.amname = 'btree' AND c.relpersistence <> 't'
		AND i.indisready AND i.indisvalid" 2>&1) ||
		fail "$mode: amcheck: $idx"
	echo "ok: $mode: $n accounts, no duplicate, sums $1, $hist history rows${committed:+ = committed}, $idx btree indexes clean"
}


# new_database MODE START: a fresh DATADIR, the server started by the
# function START (with MODE), database "bench" made by pgbench -i -s SCALE
new_database() {
	local mode=$1 start=$2
	DATA=$MNT/data
	rm -rf "$DATA" "$SOCK" "$LOG".*
	mkdir -p "$SOCK"
	chown "$PGUSER_OS" "$SOCK"
	pg "$PGBIN/initdb" -D "$DATA" -A trust -U "$PGUSER_OS" >/dev/null ||
		fail "initdb"
	"$start" "$mode"
	pg "$PGBIN/createdb" -h "$SOCK" -p "$PORT" bench || fail "$mode: createdb"
	pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -i -s "$SCALE" -q bench \
		>"$SHIM_TMP/init.out" 2>&1 ||
		fail "$mode: pgbench -i: $(tail -5 "$SHIM_TMP/init.out")"
}

# pgbench_run MODE [PGBENCH OPTIONS]: pgbench -c 4 -j 2 -T SECS, which
# must succeed with no abort; sets COMMITTED and TPS from its report
pgbench_run() {
	local mode=$1
	shift
	pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" "$@" -c 4 -j 2 -T "$SECS" bench \
		>"$SHIM_TMP/run.out" 2>&1 ||
		fail "$mode: pgbench run: $(tail -5 "$SHIM_TMP/run.out")"
	! grep -q "aborted\|ERROR" "$SHIM_TMP/run.out" ||
		fail "$mode: pgbench: $(grep "aborted\|ERROR" "$SHIM_TMP/run.out" | head -3)"
	COMMITTED=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$SHIM_TMP/run.out")
	[ -n "$COMMITTED" ] || fail "$mode: no transaction count: $(cat "$SHIM_TMP/run.out")"
	TPS=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$SHIM_TMP/run.out" | tail -1)
}
