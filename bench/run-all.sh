#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/run-all.sh [OUTDIR] - the measurements behind docs/BENCHMARKS.md:
# every wtio-bench suite, side by side with the kernel's modes, on a fresh
# XFS image on a loop device over /dev/shm with loop direct I/O (root; the
# least noisy target on a VM), plus the core engine's microbenchmark and
# the fio agreement check. Each run writes its table (.txt) and its JSON
# into OUTDIR (default bench-results-DATE), and bench/plot draws the JSON.
# Sizes are scaled to a 2-core, 24 GiB machine; run it on a quiet one.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
out=${1:-bench-results-$(date -u +%Y%m%d-%H%M)}
bench=$here/build/tools/wtio-bench/wtio-bench
micro=$here/build/bench/wtio-microbench
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -x "$bench" ] || { echo "build first: meson setup build && ninja -C build" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run-all.sh needs root for the XFS loop target" >&2; exit 2; }

# ONLY="name name..." runs just those experiments (and skips the rest).
wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

run() {	# NAME ARGS...: one wtio-bench run on a fresh XFS loop image
	local name=$1
	shift
	wanted "$name" || return 0
	echo "== $name: wtio-bench $*"
	# A failed mode is reported in its table; go on with the others.
	"$bench" --xfs-loop --no-progress --json="$out/$name.json" "$@" |
		tee "$out/$name.txt" || echo "== $name: wtio-bench exited non-zero"
}

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "nproc: $(nproc)"
	free -g | sed -n 2p | awk '{print "memory: " $2 " GiB"}'
	echo "kernel: $(uname -r)"
	echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$out/machine.txt"

# Reference Tables 1-4 (numjobs 1, 2, 4; 8 threads on 2 cores only
# measures the scheduler) and the iodepth 1 variants of issue #3.
run table1 --suite=table1 --numjobs=1,2,4 --size=256M --runtime=5 --ramp_time=1
run table1-ahead --suite=table1 --numjobs=1,2,4 --size=256M --runtime=5 \
	--ramp_time=1 --size-ahead=1
run table2 --suite=table2 --numjobs=1,2,4 --size=512M --runtime=5 --ramp_time=1 \
	--modes=kernel-buffered,kernel-direct,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial
run table3 --suite=table3 --numjobs=1,2,4 --size=256M --runtime=5 --ramp_time=1 \
	--modes=kernel-buffered,kernel-direct,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial
run table4 --suite=table4 --numjobs=1,2,4 --size=512M --runtime=5 --ramp_time=1
run table2-qd1 --suite=table2 --numjobs=1,2 --iodepth=1 --size=512M --runtime=5 \
	--ramp_time=1 --modes=kernel-direct,wtio-writethrough,wtio-writethrough-noserial
run table1-qd1 --suite=table1 --numjobs=1,2 --iodepth=1 --size=256M --runtime=5 \
	--ramp_time=1 --modes=kernel-direct,wtio-writethrough,wtio-writethrough-noserial
run cached-read --suite=cached-read --runtime=3 --ramp_time=1
run sustained --suite=sustained --runtime=20 --ramp_time=2 --xfs-size=12G
run smallfiles --suite=smallfiles
# Streaming 4x wtio's budget with drop-behind, per-second throughput.
run dontcache-stream --suite=dontcache-stream --size=4G --cache-size=1G \
	--runtime=20 --xfs-size=12G
# Stripe-aligned against unaligned sequential writes on a striped image.
for align in 1 0; do
	run stripe-align$align --rw=write --bs=1M --size=1G --runtime=5 \
		--ramp_time=1 --stripe=64k,4 --stripe-align=$align \
		--modes=kernel-direct,wtio-writeback,wtio-writethrough
done
if wanted microbench; then
	echo "== microbench (cached reads and write-back writes, ext4 here)"
	"$micro" "$out" 16 3 | tee "$out/microbench-16M.txt"
	"$micro" "$out" 256 3 | tee "$out/microbench-256M.txt"
fi
if wanted compare-fio; then
	echo "== fio agreement"
	"$here/bench/compare-fio.sh" --bench="$bench" --directory="$out" |
		tee "$out/compare-fio.txt" || true
fi
if command -v gnuplot >/dev/null; then
	for j in "$out"/*.json; do
		"$here/bench/plot" "$j" "$out/plots" >/dev/null 2>&1 || true
	done
fi
echo "results in $out"
