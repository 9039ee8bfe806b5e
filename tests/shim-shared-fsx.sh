#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wtio-fsx as cooperating processes on one file (issue #14): `wtio-fsx
# --posix --procs=3`, one shadow in shared memory, each operation of any
# process under one lock, so every read must see the latest write of
# whichever process made it. Once without the shim (the tool's own
# check), then under `wtio-run --shared` in every mode with several seeds,
# one of them in a 1 MiB cache (eviction and write-back under pressure),
# one with operations up to 256 KiB in an 8 MiB cache, so that the
# file changes between 4 KiB and 64 KiB folios (large folios, the
# holder's default) whenever its cache empties;
# the holder's stats show the file served and never passed through.
# SHARED_FLAG= runs it under the per-process shim, where it fails.
# SHARED_FSX_OPS (1500 per process), ONLY_MODES narrow a manual run.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -x "${WTIO_FSX:-}" ] || skip "wtio-fsx not built"
OPS=${SHARED_FSX_OPS:-1500}
FSX=("$WTIO_FSX" --posix --procs=3 -q -N "$OPS" -l 256k -o 32k)

"${FSX[@]}" -S 1 "$SERVED/fsx" >"$SHIM_TMP/out" 2>&1 ||
	fail "wtio-fsx --procs=3 without the shim (the tool itself): $(tail -20 "$SHIM_TMP/out")"
echo "ok: without the shim: $(tail -1 "$SHIM_TMP/out")"
for mode in ${ONLY_MODES:-$MODES}; do
	for seed in 21 22 23 24; do
		cache=()
		fsx=("${FSX[@]}")
		[ "$seed" = 23 ] && cache=(--cache-size=1M)
		[ "$seed" = 24 ] && cache=(--cache-size=8M) &&
			fsx=("$WTIO_FSX" --posix --procs=3 -q -N "$OPS" -l 4m -o 256k)
		rm -f "$SERVED/fsx"
		srun "$mode" "$STATS" "${cache[@]}" -- "${fsx[@]}" -S "$seed" \
			"$SERVED/fsx" >"$SHIM_TMP/out" 2>&1
		rc=$?
		[ "$rc" = 0 ] ||
			fail "$mode, seed $seed${cache:+ ${cache[*]}}: wtio-fsx --procs=3 exit $rc: $(grep -v '^wtio-preload\[' "$SHIM_TMP/out" | tail -40)"
		wait_holder "$STATS"
		served_at_least "$STATS" 2 "$mode seed $seed"
		if [ -n "$SHARED_FLAG" ]; then
			d=$(demotions "$STATS")
			[ "$d" = 0 ] ||
				fail "$mode seed $seed: $d demotions: $(grep '^demoted' "$STATS" | tr '\n' ' ')"
		fi
		echo "ok: $mode, seed $seed${cache:+ ${cache[*]}}: $(tail -1 "$SHIM_TMP/out" | cut -c1-100)"
	done
done
echo "PASS: wtio-fsx --procs=3 under one cache per program in: ${ONLY_MODES:-$MODES}"
