#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PostgreSQL 15 under one cache per program (issue #14): the server started
# by `wtio-run --shared --mode=M --paths=DATADIR -- pg_ctl start`, so the
# postmaster, every backend, the checkpointer, the background writer and
# the WAL writer share the holder's one cache. For each mode, on one
# database (initdb, pgbench -i -s SCALE under the holder):
#   clean     pgbench -c 4 -j 2 -T SECONDS, a clean stop, the holder's exit
#             (every file written back), a restart without the shim and the
#             checks of tests/shim-pg.sh, committed transactions included;
#   backend   under the holder again, one client backend SIGKILLed halfway
#             through pgbench: the postmaster restarts the others and runs
#             crash recovery itself, under the holder; the checks on that
#             server;
#   postmaster  the postmaster SIGKILLed halfway through pgbench; its
#             children exit on their own (SIGKILLed after 30 s if not); the
#             holder writes back and exits; a restart without the shim runs
#             crash recovery; the checks.
# Every pgbench run is -n: without it pgbench truncates pgbench_history,
# and after the first run sum(delta) could not equal the balances.
# After each holder's exit its stats (WTIO_HOLDER_STATS) must show the
# relation files served: at least PG_MIN_SERVED opens, no file under
# base/, global/ or pg_wal/ demoted (the log's --debug lines name them),
# no write-back lost; a client death counted after a kill.
# `shim-pg-shared.sh baseline` runs the same phases without the shim (the
# test's own check; no holder checks).
# Environment: PG_SECONDS (30), PG_SCALE (10), PG_MODES (writeback
# writethrough writethrough-noserial), PG_PHASES (clean backend postmaster).
. "$(dirname "$0")/shim-pg-lib.sh"
PGMODES=${PG_MODES:-writeback writethrough writethrough-noserial}
PHASES=${PG_PHASES:-clean backend postmaster}
MIN_SERVED=${PG_MIN_SERVED:-50}
"$WTIO_RUN" --help 2>&1 | grep -q -- --shared ||
	fail "wtio-run has no --shared (issue #14 stage 1 not built)"
STATS=$MNT/holder.stats
HOLDER_PID=""

# alive PID: running (a zombie nobody reaped yet is not)
alive() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "${st%% *}" != Z ] && [ "${st%% *}" != X ]
}

cleanup_shared() {
	local i
	if [ -n "$DATA" ] && [ -f "$DATA/postmaster.pid" ]; then
		runuser -u "$PGUSER_OS" -- "$PGBIN/pg_ctl" -D "$DATA" -m immediate \
			-w -t 30 stop >/dev/null 2>&1
	fi
	kill_server
	if [ -n "$HOLDER_PID" ] && [ "$HOLDER_PID" != baseline ]; then
		for i in $(seq 100); do
			alive "$HOLDER_PID" || break
			sleep 0.1
		done
		kill -9 "$HOLDER_PID" 2>/dev/null
	fi
	cleanup
}
trap cleanup_shared EXIT

start_shared() {
	local mode=$1 pm h
	rm -f "$STATS" "$STATS.log"
	if [ "$VARIANT" = baseline ]; then
		# the same phases without the shim: the test's own check
		pg "$PGBIN/pg_ctl" -D "$DATA" -l "$LOG.shim" -w -t 300 \
			-o "-p $PORT -k $SOCK -c listen_addresses=''" start >/dev/null ||
			fail "baseline start failed"
		collect_server
		HOLDER_PID=baseline
		return
	fi
	pg env WTIO_HOLDER_STATS="$STATS" "$WTIO_RUN" --shared --log="$STATS.log" \
		--debug --preload="$WTIO_PRELOAD" --mode="$mode" --paths="$DATA" \
		--cache-size=256M -- \
		"$PGBIN/pg_ctl" -D "$DATA" -l "$LOG.shim" -w -t 300 \
		-o "-p $PORT -k $SOCK -c listen_addresses=''" start >/dev/null 2>&1 ||
		fail "$mode: start under wtio-run --shared failed: $(tail -20 "$LOG.shim" 2>/dev/null) $(tail -5 "$STATS.log" 2>/dev/null)"
	collect_server
	pm=${SERVER_PIDS[0]}
	grep -q libwtio-preload "/proc/$pm/maps" ||
		fail "$mode: the postmaster is not under the shim"
	h=$(tr '\0' '\n' <"/proc/$pm/environ" | sed -n 's/^WTIO_HOLDER=//p')
	[ -n "$h" ] || fail "$mode: the postmaster has no WTIO_HOLDER: not under the holder"
	HOLDER_PID=$(sed -n 's/^@wtio-holder-\([0-9]*\)-.*/\1/p' <<<"$h")
	[ -n "$HOLDER_PID" ] && alive "$HOLDER_PID" ||
		fail "$mode: no holder process for WTIO_HOLDER=$h"
}

# holder_checks MODE PHASE: wait for the holder's exit, then its stats
holder_checks() {
	local mode=$1 phase=$2 i served lost died rel
	if [ "$VARIANT" = baseline ]; then
		HOLDER_PID=""
		return 0
	fi
	for i in $(seq 1200); do
		grep -q '^dirty_lost_bytes ' "$STATS" 2>/dev/null && break
		sleep 0.1
	done
	grep -q '^dirty_lost_bytes ' "$STATS" 2>/dev/null ||
		fail "$mode $phase: the holder (pid $HOLDER_PID) did not exit within 120 s of the server's end: $(tail -5 "$STATS.log")"
	for i in $(seq 100); do
		alive "$HOLDER_PID" || break
		sleep 0.1
	done
	! alive "$HOLDER_PID" ||
		fail "$mode $phase: the holder wrote its stats but lives on"
	HOLDER_PID=""
	served=$(awk '$1 == "opens_served" { print $2 }' "$STATS")
	lost=$(awk '$1 == "dirty_lost_bytes" { print $2 }' "$STATS")
	died=$(awk '$1 == "clients_died" { print $2 }' "$STATS")
	echo "info: $mode $phase: holder stats: $(tr '\n' ' ' <"$STATS")"
	[ "${served:-0}" -ge "$MIN_SERVED" ] ||
		fail "$mode $phase: the holder served ${served:-no} opens, want at least $MIN_SERVED"
	[ "${lost:-1}" = 0 ] || fail "$mode $phase: $lost dirty bytes lost at the holder's exit"
	if [ "$phase" != clean ]; then
		[ "${died:-0}" -ge 1 ] ||
			fail "$mode $phase: no client death counted after a SIGKILL"
	fi
	grep -i "demot" "$STATS.log" | sed 's/^/info: demoted: /' | head -10
	grep -i "not served" "$STATS.log" | sed 's/^[^:]*: //' | sort | uniq -c |
		sort -rn | head -8 | sed 's/^/info: not served: /'
	rel=$(grep -i "not served" "$STATS.log" | grep -v "not a regular file" |
		grep -E "/(base|global|pg_wal)/" | head -3)
	[ -z "$rel" ] || fail "$mode $phase: relation files not served: $rel"
	rel=$(grep -i "demot" "$STATS.log" | grep -E "/(base|global|pg_wal)/" | head -3)
	[ -z "$rel" ] || fail "$mode $phase: relation or WAL files demoted: $rel"
}

# wait_ready WHAT: the server takes connections again (crash restart)
wait_ready() {
	local i
	for i in $(seq 600); do
		psql_q "SELECT 1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "$1: the server did not come back within 60 s: $(tail -10 "$LOG.shim")"
}

# pgbench_bg: the workload, in the background (PGB_PID)
pgbench_bg() {
	pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -n -c 4 -j 2 -T "$SECS" bench \
		>"$SHIM_TMP/run.out" 2>&1 &
	PGB_PID=$!
}

phase_clean() {
	local mode=$1 committed tps before
	before=$(psql_q "SELECT count(*) FROM pgbench_history") || fail "$mode: history"
	pgbench_run "$mode" -n
	committed=$((COMMITTED + before))	# history rows expected
	tps=$TPS
	stop "$mode"
	grep -q "database system is shut down" "$LOG.shim" ||
		fail "$mode: no clean shutdown: $(tail -5 "$LOG.shim")"
	holder_checks "$mode" clean
	start_plain "$mode"
	checks "$mode (--shared, clean)" "$committed"
	echo "info: $mode: $tps tps (--shared, -c 4 -j 2 -T $SECS, scale $SCALE)"
	stop "$mode"
}

phase_backend() {
	local mode=$1 pm victim i
	collect_server
	pm=${SERVER_PIDS[0]}
	pgbench_bg
	sleep $((SECS / 2))
	victim=$(ps -o pid=,args= --ppid "$pm" | awk '/bench \[local\]/ { print $1; exit }')
	[ -n "$victim" ] || fail "$mode: no client backend to kill: $(ps -o pid=,args= --ppid "$pm")"
	kill -9 "$victim"
	wait "$PGB_PID"	# its connections are terminated by the restart
	# the postmaster's crash restart, seen in its log (pgbench may have
	# ended before it began)
	for i in $(seq 300); do
		grep -q "terminated by signal 9" "$LOG.shim" &&
			grep -q "reinitializing" "$LOG.shim" && break
		sleep 0.1
	done
	grep -q "terminated by signal 9" "$LOG.shim" &&
		grep -q "reinitializing" "$LOG.shim" ||
		fail "$mode: no crash restart within 30 s of the backend's SIGKILL: $(grep -v '^wtio-preload' "$LOG.shim" | tail -8)"
	wait_ready "$mode (backend SIGKILL)"
	[ "$(head -1 "$DATA/postmaster.pid")" = "$pm" ] ||
		fail "$mode: the postmaster did not survive the backend's SIGKILL"
	collect_server
	checks "$mode (--shared, backend $victim SIGKILLed, restarted under the holder)" ""
}

phase_postmaster() {
	local mode=$1 pm i left p pids
	collect_server
	pm=${SERVER_PIDS[0]}
	pgbench_bg
	sleep $((SECS / 2))
	collect_server
	pids=("${SERVER_PIDS[@]}")
	kill -9 "$pm"
	wait "$PGB_PID"	# pgbench fails: its server went away
	# the children notice the postmaster's death and exit on their own
	# (through the holder); gone and reaped (the new postmaster takes a
	# zombie for a live server)
	for i in $(seq 300); do
		left=0
		for p in "${pids[@]}"; do
			[ -e "/proc/$p" ] && left=$((left + 1))
		done
		[ "$left" = 0 ] && break
		sleep 0.1
	done
	if [ "$left" != 0 ]; then
		echo "info: $mode: $left server processes left 30 s after the postmaster's SIGKILL: SIGKILLed"
		kill_server
		sleep 1
	fi
	SERVER_PIDS=()
	holder_checks "$mode" postmaster
	start_plain "$mode"
	grep -q "not properly shut down\|interrupted" "$LOG.plain" ||
		fail "$mode: no crash recovery after the postmaster's SIGKILL: $(tail -5 "$LOG.plain")"
	checks "$mode (--shared, postmaster SIGKILLed)" ""
	stop "$mode"
}

for mode in $PGMODES; do
	t0=$(date +%s)
	new_database "$mode" start_shared
	echo "info: $mode: initdb + pgbench -i -s $SCALE under --shared in $(($(date +%s) - t0)) s"
	last=clean
	for phase in $PHASES; do
		[ -n "$HOLDER_PID" ] || start_shared "$mode"
		case $phase in
		clean) phase_clean "$mode" ;;
		backend) phase_backend "$mode" ;;
		postmaster) phase_postmaster "$mode" ;;
		*) fail "unknown phase $phase" ;;
		esac
		last=$phase
		echo "ok: $mode: $phase"
	done
	if [ -n "$HOLDER_PID" ]; then
		stop "$mode"
		holder_checks "$mode" "$last"
	fi
	echo "info: $mode: $(($(date +%s) - t0)) s"
done
echo "PASS: PostgreSQL under wtio-run --shared ($PHASES) in: $PGMODES"
