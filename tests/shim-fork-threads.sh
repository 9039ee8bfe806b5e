#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fork() from a thread with dirty served data that never submitted I/O
# itself, after another thread did (tests/shim_fork_threads.c), in every
# mode of the per-process shim: the fork returns (it once hung forever:
# the library's fork handler, registered at its first I/O and so run
# first, held the lock the shim's write-back before the fork needed), the
# child and the parent read what was written.
. "$(dirname "$0")/shim-lib.sh"
PROG=$SHIM_BIN/shim_fork_threads
[ -x "$PROG" ] || skip "shim_fork_threads not built"
for mode in $MODES; do
	out=$(timeout 60 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M -- "$PROG" "$SERVED/f" 2>&1)
	rc=$?
	[ $rc = 124 ] && fail "$mode: fork hung (killed after 60 s): $out"
	[ $rc = 0 ] && grep -q '^done$' <<<"$out" || fail "$mode: exit $rc: $out"
	rm -f "$SERVED/f"
done
echo "PASS"
