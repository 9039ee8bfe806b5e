#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two processes on one file at once (issue #11): tests/shim/shim_share.c's
# roles A (opens first, leaves write-back data in its cache) and B (opens
# while A is serving the file), each overwriting its blocks, appending,
# reading the other's blocks and the size. A under the shim and B outside
# it, B under the shim and A outside, and both under the shim, in every
# mode: every read sees the latest acknowledged write, sizes agree, and at
# the end nothing acknowledged is missing or doubled. Without the lease
# (a file served in one process while the other passes through) B reads
# A's stale blocks right after its open.
. "$(dirname "$0")/shim-lib.sh"
BIN=$SHIM_BIN/shim_share
[ -x "$BIN" ] || skip "shim_share not built"
CTL=$SHIM_TMP/ctl

srun() {
	local mode=$1
	shift
	timeout 120 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M "$@"
}

# share MODE WHO_A WHO_B: WHO is "shim" or "plain"
share() {
	local mode=$1 a=$2 b=$3 f=$SERVED/shared pa pb ra=0 rb=0
	local dbg=$SHIM_TMP/debug.$mode.$a.$b
	rm -f "$f" "$CTL"
	if [ "$a" = shim ]; then
		srun "$mode" --debug -- "$BIN" A "$f" "$CTL" 2>"$dbg" &
	else
		timeout 120 "$BIN" A "$f" "$CTL" &
	fi
	pa=$!
	if [ "$b" = shim ]; then
		srun "$mode" -- "$BIN" B "$f" "$CTL" &
	else
		timeout 120 "$BIN" B "$f" "$CTL" &
	fi
	pb=$!
	wait $pa || ra=$?
	wait $pb || rb=$?
	[ "$ra" = 0 ] && [ "$rb" = 0 ] ||
		fail "$mode, A $a, B $b: A exited $ra, B $rb"
	"$BIN" check "$f" "$CTL" || fail "$mode, A $a, B $b: final check"
	# the case that matters: A served the file until B's open
	if [ "$a" = shim ]; then
		grep -q "served by wtio" "$dbg" ||
			fail "$mode: A's file was not served: $(cat "$dbg")"
		grep -q "lease broken" "$dbg" ||
			fail "$mode: A was not told of B's open: $(cat "$dbg")"
	fi
	echo "ok: $mode, A $a, B $b"
}

for mode in $MODES; do
	share "$mode" shim plain
	share "$mode" plain shim
	share "$mode" shim shim
done
echo "PASS: two processes share one file coherently in every mode"
