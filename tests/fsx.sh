#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fsx.sh WTIO_FSX - wtio-fsx over several seeds and folio sizes (bounded:
# 3 seeds x folio 4K/64K x 3000 ops on the default backend, one seed per
# folio size on psync, one --posix run). Each run checks every operation
# against the shadow
# copy and the backing file after every fsync and close.
set -euo pipefail
fsx=$1
dir=$(mktemp -d "$PWD/fsx.XXXXXX")
trap 'rm -rf "$dir"' EXIT
runs=0
for folio in 4096 65536; do
	for seed in 1 2 3; do
		"$fsx" -q -N 3000 -S "$seed" -f "$folio" -l 512k -o 128k "$dir/f"
		runs=$((runs + 1))
	done
	"$fsx" -q -N 3000 -S 4 -f "$folio" -b psync -l 512k -o 128k "$dir/f"
	runs=$((runs + 1))
done
"$fsx" -q --posix -N 3000 -S 7 -l 512k -o 128k "$dir/p"
runs=$((runs + 1))
echo "fsx: $runs runs of 3000 ops (seeds 1-4, folio 4K/64K, backends auto and psync, one --posix): PASS"
