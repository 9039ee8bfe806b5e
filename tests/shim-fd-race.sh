#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Threads doing pread/pwrite on a descriptor number while another thread
# closes it and opens a served file, a file outside the paths, a pipe or
# /dev/zero on the same number (tests/shim/shim_fd_race.c, REVIEW A7):
# every result is one the kernel could give (the old file's, EBADF, the
# new file's), never EINVAL from the served description's O_DIRECT or the
# I/O of the shim's hidden descriptors, and every byte read is from the
# right file and version. On low numbers and among the shim's own (high).
# Every mode of the per-process shim; a few seconds each.
. "$(dirname "$0")/shim-lib.sh"
R=$SHIM_BIN/shim_fd_race
[ -x "$R" ] || skip "shim_fd_race not built"
SECS=${FD_RACE_SECONDS:-3}
head -c 4096 /dev/zero | tr '\0' Z >"$SHIM_TMP/outside"
for mode in $MODES; do
	for where in low high; do
		rm -f "$SERVED"/*
		out=$(run "$mode" -- "$R" "$SERVED" "$SHIM_TMP/outside" "$SECS" "$where" 2>&1) ||
			fail "$mode, $where numbers: $(tail -5 <<<"$out")"
		echo "$mode, $where numbers: $out"
	done
done
echo "PASS: I/O racing a close gets the kernel's answers"
