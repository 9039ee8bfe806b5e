#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A second open, an mmap or a fork of a served file returns while other
# threads keep doing I/O on it (tests/shim/shim_io_gate.c), in every mode
# of the per-process shim, with reader and with writer threads. Each
# waited for the shim's exclusive io_lock for as long as the I/O went on.
. "$(dirname "$0")/shim-lib.sh"
G=$SHIM_BIN/shim_io_gate
[ -x "$G" ] || skip "shim_io_gate not built"
for mode in $MODES; do
	for rw in r w; do
		for what in open mmap fork; do
			rm -f "$SERVED/gate.dat"
			out=$(run "$mode" -- "$G" "$SERVED" "$rw" "$what" 2>&1) ||
				fail "$mode $rw $what: $out"
			echo "$mode: $out"
		done
	done
done
echo "PASS: exclusive takers are not starved by overlapping I/O"
