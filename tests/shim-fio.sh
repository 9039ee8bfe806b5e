#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio --verify=crc32c on the psync and pvsync2 engines, write then verify,
# under wtio-run in each mode.
. "$(dirname "$0")/shim-lib.sh"
command -v fio >/dev/null || skip "fio not installed (scripts/deps.sh)"

for mode in $MODES; do
	for eng in psync pvsync2; do
		for rw in randwrite write; do
			rm -f "$SERVED/fio.dat"
			if ! out=$(run "$mode" -- fio --name=verify --filename="$SERVED/fio.dat" \
				--ioengine=$eng --rw=$rw --bs=4k --bsrange=512-64k \
				--size=32m --verify=crc32c --do_verify=1 --verify_fatal=1 \
				--verify_backlog=0 --minimal 2>&1); then
				echo "$out" | tail -20
				fail "fio $eng $rw in mode $mode"
			fi
			# and again in a fresh process: the data is on disk
			if ! out=$(run "$mode" -- fio --name=verify --filename="$SERVED/fio.dat" \
				--ioengine=$eng --rw=$rw --bs=4k --bsrange=512-64k \
				--size=32m --verify=crc32c --verify_only=1 --verify_fatal=1 \
				--minimal 2>&1); then
				echo "$out" | tail -20
				fail "fio verify_only $eng $rw in mode $mode"
			fi
			echo "ok: fio $eng $rw, mode $mode"
		done
	done
done
exit 0
