#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The POSIX exerciser (random pread/pwrite/read/write/lseek/ftruncate/
# fsync/reopen against a model) and the semantics checks (append, dup,
# stat, stdio, fork, exit, mmap, fallocate, truncate, copy_file_range,
# SEEK_DATA/HOLE, pwritev2 flags, a second process) under wtio-run in each
# mode; after exit the file equals the model.
. "$(dirname "$0")/shim-lib.sh"

fsx=$SHIM_BIN/shim_fsx
for mode in $MODES; do
	for seed in 1 2; do
		rm -f "$SERVED/fsx" "$SHIM_TMP/model"
		run "$mode" -- "$fsx" "$SERVED/fsx" "$SHIM_TMP/model" 15000 $((seed * 7919)) ||
			fail "shim_fsx ($mode, seed $seed)"
		cmp "$SERVED/fsx" "$SHIM_TMP/model" || fail "file after exit ($mode, seed $seed)"
	done
	# small writes, many partial blocks
	run "$mode" -- "$fsx" "$SERVED/fsx" "$SHIM_TMP/model" 15000 3 700 ||
		fail "shim_fsx small ($mode)"
	cmp "$SERVED/fsx" "$SHIM_TMP/model" || fail "file after exit, small ($mode)"
	rm -rf "${SERVED:?}"/*
	run "$mode" -- "$SHIM_BIN/shim_semantics" "$SERVED" || fail "shim_semantics ($mode)"
	rm -rf "${SERVED:?}"/*
	run "$mode" --dsync -- "$SHIM_BIN/shim_semantics" "$SERVED" || fail "shim_semantics ($mode, dsync)"
	# the project's exerciser, as an unmodified program
	if [ -x "${WTIO_FSX:-}" ]; then
		rm -f "$SERVED/wtio-fsx"
		run "$mode" -- "$WTIO_FSX" --posix -N 20000 -S 7 -q "$SERVED/wtio-fsx" ||
			fail "wtio-fsx --posix ($mode)"
	else
		echo "note: tools/wtio-fsx not built; its --posix run is left out"
	fi
	echo "ok: posix, mode $mode"
done
exit 0
