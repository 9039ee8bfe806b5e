#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# dd, cp and cmp of a 64 MiB file under wtio-run in each mode give
# identical bytes (cp uses copy_file_range: the flush-then-pass-through
# path), and a file outside the paths is left to the kernel.
. "$(dirname "$0")/shim-lib.sh"

ref=$SHIM_TMP/ref.bin	# outside the served paths
head -c 64M /dev/urandom >"$ref" || fail "make reference"
for mode in $MODES; do
	rm -f "$SERVED"/*.bin
	run "$mode" -- dd if="$ref" of="$SERVED/dd.bin" bs=1M iflag=fullblock status=none ||
		fail "dd in ($mode)"
	run "$mode" -- dd if="$SERVED/dd.bin" of="$SERVED/dd2.bin" bs=64k conv=fsync status=none ||
		fail "dd served->served ($mode)"
	run "$mode" -- cp "$SERVED/dd2.bin" "$SERVED/cp.bin" || fail "cp ($mode)"
	run "$mode" -- cp "$SERVED/cp.bin" "$SHIM_TMP/out.bin" || fail "cp out ($mode)"
	# all four compared inside the shim and outside it
	run "$mode" -- sh -c "cmp '$ref' '$SERVED/dd.bin' && cmp '$ref' '$SERVED/dd2.bin' && cmp '$ref' '$SERVED/cp.bin'" ||
		fail "cmp under the shim ($mode)"
	for f in dd.bin dd2.bin cp.bin; do
		cmp "$ref" "$SERVED/$f" || fail "cmp $f ($mode)"
	done
	cmp "$ref" "$SHIM_TMP/out.bin" || fail "cmp out.bin ($mode)"
	# odd sizes and a partial last block
	run "$mode" -- dd if="$ref" of="$SERVED/odd.bin" bs=3333 count=777 status=none ||
		fail "dd odd ($mode)"
	cmp -n $((3333 * 777)) "$ref" "$SERVED/odd.bin" || fail "cmp odd ($mode)"
	[ "$(stat -c %s "$SERVED/odd.bin")" = $((3333 * 777)) ] || fail "odd size ($mode)"
	echo "ok: dd/cp/cmp, mode $mode"
done
exit 0
