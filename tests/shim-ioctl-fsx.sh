#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shim's fsx exerciser with xfstests fsx's CLONE (ioctl FICLONERANGE),
# DEDUPE (ioctl FIDEDUPERANGE) and COPY (raw syscall copy_file_range)
# operations, among its reads, writes, truncates, fsyncs and reopens, on
# XFS with reflink: once without the shim (the exerciser's own check),
# then under wtio-run in every mode with several seeds; every read is
# checked against the model, and the file after exit equals it.
# A manual run can be narrowed: ONLY_MODES="writeback", SHIM_FSX_OPS=2000.
# SHIM_FSX_CACHE=256K: that budget instead of run's 64M (the adaptive
# mode's meson test: writes that cross the dirty limit go write-through).
. "$(dirname "$0")/shim-ioctl-xfs.sh"

fsx=$SHIM_BIN/shim_fsx
ops=${SHIM_FSX_OPS:-6000}
rm -f "$SERVED/fsx" "$SHIM_TMP/model"
"$fsx" "$SERVED/fsx" "$SHIM_TMP/model" "$ops" 1 65536 r
rc=$?
[ $rc = 77 ] && skip "no reflink here"
[ $rc = 0 ] || fail "shim_fsx without the shim (the exerciser itself)"
cmp "$SERVED/fsx" "$SHIM_TMP/model" || fail "file without the shim"
for mode in ${ONLY_MODES:-$MODES}; do
	for seed in 11 12 13; do
		rm -f "$SERVED/fsx" "$SHIM_TMP/model"
		out=$(run "$mode" ${SHIM_FSX_CACHE:+--cache-size=$SHIM_FSX_CACHE} \
			  --debug -- "$fsx" "$SERVED/fsx" "$SHIM_TMP/model" "$ops" "$seed" 65536 r 2>&1)
		rc=$?
		grep -v '^wtio-preload\[' <<<"$out"
		[ $rc = 0 ] || fail "shim_fsx with clone/dedupe/copy ($mode, seed $seed): exit $rc"
		grep -q "fsx served by wtio" <<<"$out" || fail "the file was not served ($mode)"
		cmp "$SERVED/fsx" "$SHIM_TMP/model" || fail "file after exit ($mode, seed $seed)"
	done
	# small lengths: many partial blocks around the clones
	rm -f "$SERVED/fsx" "$SHIM_TMP/model"
	run "$mode" ${SHIM_FSX_CACHE:+--cache-size=$SHIM_FSX_CACHE} \
		-- "$fsx" "$SERVED/fsx" "$SHIM_TMP/model" "$ops" 14 3000 r ||
		fail "shim_fsx small ($mode)"
	cmp "$SERVED/fsx" "$SHIM_TMP/model" || fail "file after exit, small ($mode)"
	echo "ok: fsx with clone/dedupe/copy, mode $mode"
done
exit 0
