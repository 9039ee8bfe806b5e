#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `wtio-run --shared`: a connection's buffer to the holder (a memfd both
# processes map: 1 MiB, grown to the size of a larger call, up to 64 MiB)
# gives back what a large call grew it by once the call is done (REVIEW
# B10: after one 64 MiB call it stayed 64 MiB, in both processes, for the
# connection's life). tests/shared_buf.c alternates large and small calls
# (pwrite, pread, readv; one split past 64 MiB), checks every byte, and
# after each call the buffer's allocated and resident size. Every mode.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
[ -x "$SHIM_BIN/shared_buf" ] || skip "shared_buf not built"
for mode in $MODES; do
	rm -f "$SERVED"/*
	out=$(srun "$mode" "$STATS" --cache-size=256M -- "$SHIM_BIN/shared_buf" "$SERVED" 2>&1)
	rc=$?
	wait_holder "$STATS"
	[ $rc = 0 ] || fail "$mode: $out"
	served_at_least "$STATS" 1 "$mode"
	echo "$mode: $out"
done
echo "PASS: shim-shared-buffer"
