#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A SIGKILLed writer loses nothing under one cache per program (issue #14):
# a writer write()s 1 MiB, is SIGKILLed with the file still open, and
# after the program (and its holder) ended the file holds the whole MiB,
# with the exact size, in every mode. The kernel (no shim) keeps it too;
# the per-process shim in write-back mode loses what it had not written
# back (docs/SHIM.md's table; printed, the documented loss).
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -x "$BIN" ] || skip "shared_matrix not built"
WANT=$SHIM_TMP/want
"$BIN" pattern 1048576 >"$WANT" || fail "shared_matrix pattern"

# one LABEL [WTIO-RUN OPTIONS]: LABEL kernel runs without the shim,
# per-process under the per-process shim, a mode under the holder. Sets
# KEPT: the bytes of the MiB kept intact from its start.
one() {
	local label=$1 front i wpid holder rc size d
	shift
	rm -f "$SERVED/data" "$SHIM_TMP/ready" "$STATS" "$STATS.log"
	case $label in
	kernel)
		"$BIN" write-pause "$SERVED/data" "$SHIM_TMP/ready" \
			>"$SHIM_TMP/out" 2>&1 & ;;
	per-process)
		timeout 120 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --paths="$SERVED" \
			--cache-size=64M "$@" -- \
			"$BIN" write-pause "$SERVED/data" "$SHIM_TMP/ready" \
			>"$SHIM_TMP/out" 2>&1 & ;;
	*)
		srun "$label" "$STATS" -- \
			"$BIN" write-pause "$SERVED/data" "$SHIM_TMP/ready" \
			>"$SHIM_TMP/out" 2>&1 & ;;
	esac
	front=$!
	for i in $(seq 200); do
		[ -s "$SHIM_TMP/ready" ] && break
		sleep 0.05
	done
	[ -s "$SHIM_TMP/ready" ] ||
		fail "$label: the writer did not write its MiB in 10 s: $(cat "$SHIM_TMP/out")"
	read -r wpid holder <"$SHIM_TMP/ready"
	kill -KILL "$wpid" || fail "$label: kill $wpid"
	wait "$front"
	rc=$?
	[ "$rc" = 137 ] ||
		fail "$label: exit status $rc, want 137 (the program's: SIGKILL): $(cat "$SHIM_TMP/out")"
	case $label in
	kernel|per-process) ;;
	*)
		if [ -n "$SHARED_FLAG" ]; then
			[ "$holder" != - ] ||
				fail "$label: the writer had no WTIO_HOLDER: not under the holder"
			wait_holder "$STATS"
			served_at_least "$STATS" 1 "$label"
			d=$(stat_of "$STATS" clients_died)
			[ "${d:-0}" -ge 1 ] ||
				fail "$label: the holder counted no client death: $(tr '\n' ' ' <"$STATS")"
		fi
		;;
	esac
	size=$(stat -c %s "$SERVED/data")
	if cmp -s "$SERVED/data" "$WANT"; then
		KEPT=1048576
	elif [ "$size" -lt 1048576 ] && cmp -s -n "$size" "$SERVED/data" "$WANT"; then
		KEPT=$size
	else
		KEPT=$(cmp "$SERVED/data" "$WANT" 2>&1 | sed -n 's/.*differ: byte \([0-9]*\).*/\1/p')
		KEPT=$(( ${KEPT:-1048577} - 1 ))
	fi
	SIZE=$size
}

one kernel
[ "$KEPT" = 1048576 ] && [ "$SIZE" = 1048576 ] ||
	fail "kernel: $KEPT of 1048576 bytes kept, size $SIZE (the test itself is wrong)"
echo "ok: kernel: the killed writer's MiB kept"
one per-process --mode=writeback
echo "info: per-process shim, writeback: $KEPT of 1048576 bytes kept, size $SIZE (docs/SHIM.md: what was not written back is lost)"
for mode in ${ONLY_MODES:-$MODES}; do
	one "$mode"
	[ "$KEPT" = 1048576 ] ||
		fail "$mode${SHARED_FLAG:+ $SHARED_FLAG}: the killed writer's file keeps $KEPT of 1048576 bytes (size $SIZE)"
	[ "$SIZE" = 1048576 ] || fail "$mode: size $SIZE, want 1048576"
	echo "ok: $mode: the SIGKILLed writer's MiB is in the file after the program"
done
echo "PASS: a SIGKILLed writer loses nothing under one cache per program"
