#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a SIGKILLed process under the shim loses (issue #11 part 4; the
# table at the top of docs/SHIM.md). A writer pwrite()s 1000-byte records
# (no fsync), logging each acknowledged one to a file outside the paths,
# and is SIGKILLed mid-run; then the records and the size are counted.
#   kernel (no shim): every acknowledged record, size = the end of the last
#     record written (the page cache outlives the process);
#   writethrough, writethrough-noserial: every acknowledged record (its
#     direct I/O finished before write returned); the size may be rounded
#     up to wtio's block, zeros after the last record (the exact size is
#     set at fsync and close);
#   writethrough --dsync: every record, durable; the size is exact when
#     each write returns, but the write in progress at the kill may leave
#     it a block long, as in write-through;
#   writeback, dontcache: what the cache had not written back (writeback:
#     up to everything since the last fsync/close/other open; dontcache:
#     the writes whose write-back had not been submitted) is lost; the
#     count is printed, not asserted.
. "$(dirname "$0")/shim-lib.sh"
helper=$SHIM_BIN/shim_crash
[ -x "$helper" ] || skip "shim_crash not built"
BS=4096

# one MODE [--dsync]: "kernel" runs without the shim
one() {
	local mode=$1 extra=${2:-} pid r logged kept size end
	rm -f "$SERVED/data" "$SHIM_TMP/log"
	if [ "$mode" = kernel ]; then
		"$helper" write "$SERVED/data" "$SHIM_TMP/log" &
	else
		"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" $extra \
			--paths="$SERVED" --cache-size=64M -- \
			"$helper" write "$SERVED/data" "$SHIM_TMP/log" &
	fi
	pid=$!
	for _ in $(seq 1 200); do
		[ -s "$SHIM_TMP/log" ] && [ "$(wc -l <"$SHIM_TMP/log")" -gt 300 ] && break
		sleep 0.02
	done
	kill -KILL $pid
	wait $pid 2>/dev/null
	r=$("$helper" count "$SERVED/data" "$SHIM_TMP/log") || fail "$mode: count"
	read -r logged kept size end <<<"$r"
	[ "$logged" -gt 0 ] || fail "$mode $extra: nothing was acknowledged"
	echo "$mode $extra: $logged acknowledged, $kept kept, $((logged - kept)) lost; size $size, last record ends at $end"
	case "$mode$extra" in
	kernel)
		[ "$kept" = "$logged" ] || fail "$mode $extra: acknowledged records lost"
		# one more record may have been written but not logged
		[ "$size" -ge "$end" ] && [ "$size" -le $((end + 1000)) ] ||
			fail "$mode $extra: size $size, want $end or one record more"
		;;
	writethrough|writethrough-noserial|writethrough--dsync)
		[ "$kept" = "$logged" ] || fail "$mode: acknowledged records lost"
		[ "$size" -ge "$end" ] &&
			[ "$size" -le $(( (end + 1000 + BS - 1) / BS * BS )) ] ||
			fail "$mode: size $size outside [$end, the block after one more record]"
		;;
	*)
		[ "$kept" -le "$logged" ] || fail "$mode: count"
		;;
	esac
}

one kernel
for mode in $MODES; do
	one "$mode"
done
one writethrough --dsync
echo "PASS: what a killed writer keeps, per mode, as docs/SHIM.md says"
