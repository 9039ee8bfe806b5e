#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lseek answered by the client from the holder's shared page (issue #14:
# PostgreSQL asks sizes with lseek(SEEK_END) about ten times per
# transaction, each a round trip before): tests/shared_seek.c checks that
# every position a local seek sets is the one the next call uses (the
# same thread, another thread, a forked child, a dup, after the file is
# passed through by mmap), that SEEK_END follows sizes other descriptions
# and processes change, that a negative result is EINVAL, and that fstat's
# size is SEEK_END's; here, the holder's stats must show that its loops
# (LOOPS seeks, LOOPS fstats) were not asked of it (seeks: the HOP_LSEEK
# requests it answered; sizes: HOP_SIZE, fstat's). In two modes.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
PROG=$SHIM_BIN/shared_seek
[ -x "$PROG" ] || skip "shared_seek not built"
LOOPS=2000
for mode in writeback writethrough; do
	rm -rf "${SERVED:?}"/*
	srun "$mode" "$STATS" -- "$PROG" "$SERVED" "$LOOPS" >"$SHIM_TMP/out" 2>&1
	rc=$?
	[ "$rc" = 0 ] && grep -q '^PASS: seek' "$SHIM_TMP/out" ||
		fail "$mode: exit $rc: $(grep -v '^wtio-preload\[' "$SHIM_TMP/out" | tail -5)"
	[ -n "$SHARED_FLAG" ] || { echo "ok: $mode (per-process shim)"; continue; }
	wait_holder "$STATS"
	seeks=$(stat_of "$STATS" seeks)
	served=$(stat_of "$STATS" opens_served)
	[ "${served:-0}" -ge 5 ] ||
		fail "$mode: only ${served:-0} opens served: $(tr '\n' ' ' <"$STATS")"
	[ -n "$seeks" ] && [ "$seeks" -lt $((LOOPS / 4)) ] ||
		fail "$mode: the holder answered ${seeks:-?} seeks of the program's $((2 * LOOPS + 40)) or so: the local path was not taken"
	sizes=$(stat_of "$STATS" sizes)
	[ -n "$sizes" ] && [ "$sizes" -lt $((LOOPS / 4)) ] ||
		fail "$mode: the holder answered ${sizes:-?} fstat sizes of the program's $LOOPS or so: the shared page was not used"
	[ "$(stat_of "$STATS" demoted_program)" -ge 1 ] ||
		fail "$mode: the mmap'd file was not passed through: $(grep '^demoted' "$STATS" | tr '\n' ' ')"
	echo "ok: $mode (the holder answered $seeks seeks, $sizes sizes)"
done
echo "PASS: shim-shared-seek"
