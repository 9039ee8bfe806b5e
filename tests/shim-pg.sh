#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# PostgreSQL 15 under wtio-run (issue #11): a server whose backends,
# checkpointer and background writer share every relation and WAL file.
# For each mode: initdb on a scratch XFS loop image, the server started
# under `wtio-run --mode=M --paths=DATADIR`, `pgbench -i -s SCALE`, then
# `pgbench -c 4 -j 2 -T SECONDS`, and
#   clean (default): a clean stop, a restart without the shim, and checks;
#   kill: halfway through the run the postmaster is SIGKILLed, then every
#         other server process (a crash of the whole server), a restart
#         without the shim runs crash recovery, then the same checks
#         except the committed-transaction count.
# Checks: exactly SCALE*100000 rows in pgbench_accounts, no aid with two
# live rows, sum(abalance) = sum(tbalance) = sum(bbalance) = sum(delta) of
# pgbench_history, (clean) pgbench's committed transactions = history
# rows, and amcheck's bt_index_check(index, heapallindexed => true) on
# every btree index of the database, catalogs included.
#   baseline: the clean variant with the server started without the shim
#         (the kernel's figures for docs/SHIM.md; not a registered test).
# Environment: PG_SECONDS (30), PG_SCALE (10), PG_MODES (all four).
# The server is always stopped, and the image removed, even on failure.
. "$(dirname "$0")/shim-pg-lib.sh"
for mode in $PGMODES; do
	t0=$(date +%s)
	new_database "$mode" start_shim
	t1=$(date +%s)
	if [ "$VARIANT" = kill ]; then
		pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" -c 4 -j 2 -T "$SECS" bench \
			>"$SHIM_TMP/run.out" 2>&1 &
		bp=$!
		sleep $((SECS / 2))
		collect_server
		kill -9 "${SERVER_PIDS[0]}"
		kill_server
		wait $bp	# pgbench fails: its server went away
		for i in $(seq 100); do
			[ -n "$(ps -o pid= -u "$PGUSER_OS" -o comm= | grep -w postgres)" ] || break
			sleep 0.1
		done
		start_plain "$mode"
		grep -q "not properly shut down\|interrupted" "$LOG.plain" ||
			fail "$mode: no crash recovery after the kill: $(tail -5 "$LOG.plain")"
		checks "$mode (SIGKILL)" ""
	else
		pgbench_run "$mode"
		committed=$COMMITTED tps=$TPS
		stop "$mode"
		grep -q "database system is shut down" "$LOG.shim" ||
			fail "$mode: no clean shutdown: $(tail -5 "$LOG.shim")"
		start_plain "$mode"
		checks "$mode" "$committed"
		echo "info: $mode: $tps tps ($VARIANT: $([ "$VARIANT" = baseline ] && echo "no shim" || echo "under the shim"), -c 4 -j 2 -T $SECS, scale $SCALE)"
	fi
	served=$(grep -c "served by wtio" "$LOG.shim")
	broken=$(grep -c "lease broken" "$LOG.shim")
	echo "info: $mode: $served opens served, $broken leases broken; init $((t1 - t0)) s, whole mode $(($(date +%s) - t0)) s"
	[ "$served" -gt 0 ] || [ "$VARIANT" = baseline ] ||
		fail "$mode: the shim served nothing"
	stop "$mode"
done
echo "PASS: PostgreSQL ($VARIANT) under the shim in: $PGMODES"
