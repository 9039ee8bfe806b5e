#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Under wtio-run --mode=writethrough --dsync a writer logs each
# acknowledged record to a side file (outside the paths, fdatasync'ed),
# is SIGKILLed mid-run, and every logged record is on disk.
. "$(dirname "$0")/shim-lib.sh"

helper=$SHIM_BIN/shim_crash
for round in 1 2 3; do
	rm -f "$SERVED/data" "$SHIM_TMP/log"
	# not through run(): $! must be the program itself (wtio-run execs)
	"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode=writethrough --dsync \
		--paths="$SERVED" --cache-size=64M -- \
		"$helper" write "$SERVED/data" "$SHIM_TMP/log" &
	pid=$!
	# wait until it is well under way, then kill it mid-write
	for _ in $(seq 1 100); do
		[ -s "$SHIM_TMP/log" ] && [ "$(wc -l <"$SHIM_TMP/log")" -gt $((50 * round)) ] && break
		sleep 0.05
	done
	sleep 0.$((RANDOM % 5))
	kill -KILL $pid
	wait $pid 2>/dev/null
	n=$(wc -l <"$SHIM_TMP/log")
	[ "$n" -gt 0 ] || fail "round $round: nothing was acknowledged"
	"$helper" verify "$SERVED/data" "$SHIM_TMP/log" || fail "round $round: lost acknowledged records"
done
exit 0
