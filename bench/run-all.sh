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
#
# Every run is equal-memory (the kernel modes in a memory cgroup limited to
# wtio's cache + 64M + the I/O buffers: wtio-bench --mem-limit=auto, the
# default as root), repeats each mode 3 times alternating (medians and
# min-max), and prints the reference's own figures beside ours with one
# verdict line per suite; verdicts.txt collects those lines.
#
#   PLAN=1 bench/run-all.sh    print each run's estimated time and the total
#   QUICK=1 bench/run-all.sh   a functional pass at tiny sizes (minutes):
#                              checks that every run works, not figures
#   ONLY="table2 sustained"    just those runs
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
out=${1:-bench-results-$(date -u +%Y%m%d-%H%M)}
bench=$here/build/tools/wtio-bench/wtio-bench
micro=$here/build/bench/wtio-microbench
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -x "$bench" ] || { echo "build first: meson setup build && ninja -C build" >&2; exit 2; }
[ -n "${PLAN:-}" ] || [ "$(id -u)" = 0 ] ||
	{ echo "run-all.sh needs root for the XFS loop target and the memory cgroup" >&2; exit 2; }

# QUICK=1: the same runs at tiny sizes (appended options win over earlier).
extra=()
if [ -n "${QUICK:-}" ]; then
	extra=(--runtime=200ms --ramp_time=0 --size=16M --repeat=2 --xfs-size=2G)
fi
total_est=0

# ONLY="name name..." runs just those experiments (and skips the rest).
wanted() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

# What a killed run leaves (its loop image, mount and cgroup): wtio-bench
# cleans up after itself, but not after SIGKILL.
reap_leftovers() {
	local img pid mnt loop cg
	for img in /dev/shm/wtio-bench-xfs.*.img; do
		[ -e "$img" ] || continue
		pid=${img#/dev/shm/wtio-bench-xfs.}; pid=${pid%.img}
		kill -0 "$pid" 2>/dev/null && continue
		for loop in $(losetup -j "$img" | cut -d: -f1); do
			for mnt in $(awk -v d="$loop" '$1 == d {print $2}' /proc/mounts); do
				umount "$mnt" || umount -l "$mnt"
				rmdir "$mnt" 2>/dev/null
			done
			losetup -d "$loop"
		done
		rm -f "$img"
	done
	for cg in /sys/fs/cgroup/memory/*/wtio-bench.* /sys/fs/cgroup/memory/*/*/wtio-bench.* \
		  /sys/fs/cgroup/*/wtio-bench.* /sys/fs/cgroup/*/*/wtio-bench.*; do
		[ -d "$cg" ] || continue
		kill -0 "${cg##*.}" 2>/dev/null || rmdir "$cg" 2>/dev/null
	done
	return 0
}

run() {	# NAME ARGS...: one wtio-bench run on a fresh XFS loop image
	local name=$1
	shift
	wanted "$name" || return 0
	if [ -n "${PLAN:-}" ]; then
		local est a args=()
		# The plan needs no target: leave out what only --xfs-loop takes.
		for a in "$@"; do
			case $a in --stripe=*|--xfs-size=*) ;; *) args+=("$a") ;; esac
		done
		est=$("$bench" --dry-run "${args[@]}" |
			sed -n 's/.*estimated time: \([0-9]*\) s.*/\1/p')
		printf '%-18s ~%5s s  wtio-bench %s\n' "$name" "${est:-?}" "$*"
		total_est=$((total_est + ${est:-0}))
		return 0
	fi
	echo "== $name: wtio-bench $* ${extra[*]}"
	local t0=$SECONDS est limit
	# A run that hangs must not stall the others: SIGINT (it reports what
	# it measured) at twice its estimate plus 5 minutes, SIGKILL 60 s on.
	est=$("$bench" --dry-run "$@" "${extra[@]}" --xfs-loop |
		sed -n 's/.*estimated time: \([0-9]*\) s.*/\1/p')
	limit=$((2 * ${est:-300} + 300))
	# A failed mode is reported in its table; go on with the others.
	timeout -s INT -k 60 "$limit" "$bench" --xfs-loop --no-progress --mem-limit=auto \
		--json="$out/$name.json" "$@" "${extra[@]}" | tee "$out/$name.txt" ||
		echo "== $name: wtio-bench exited non-zero (timed out after ${limit} s?)" |
		tee -a "$out/times.txt"
	reap_leftovers
	echo "== $name: $((SECONDS - t0)) s" | tee -a "$out/times.txt"
}

[ -n "${PLAN:-}" ] || {
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "nproc: $(nproc)"
	free -g | sed -n 2p | awk '{print "memory: " $2 " GiB"}'
	echo "kernel: $(uname -r)"
	echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} | tee "$out/machine.txt"

# Reference Tables 1-4 (numjobs 1, 2, 4; 8 threads on 2 cores only
# measures the scheduler) and the iodepth 1 variants of issue #3.
# Table 1's file grows for the whole run (extending writes, no wrap at
# --size): merged write-through appends reach ~1 GiB/s here, 6 GiB in one
# trial, so its image is 12G (in RAM) where the default 4G ran out (ENOSPC).
run table1 --suite=table1 --numjobs=1,2,4 --size=256M --runtime=5 --ramp_time=1 \
	--xfs-size=12G
run table1-ahead --suite=table1 --numjobs=1,2,4 --size=256M --runtime=5 \
	--ramp_time=1 --size-ahead=1 --xfs-size=12G
run table2 --suite=table2 --numjobs=1,2,4 --size=512M --runtime=5 --ramp_time=1 \
	--modes=kernel-buffered,kernel-direct,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial
run table3 --suite=table3 --numjobs=1,2,4 --size=256M --runtime=5 --ramp_time=1 \
	--modes=kernel-buffered,kernel-direct,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial
run table4 --suite=table4 --numjobs=1,2,4 --size=512M --runtime=5 --ramp_time=1
run table2-qd1 --suite=table2 --numjobs=1,2 --iodepth=1 --size=512M --runtime=5 \
	--ramp_time=1 --modes=kernel-direct,wtio-writethrough,wtio-writethrough-noserial
run table1-qd1 --suite=table1 --numjobs=1,2 --iodepth=1 --size=256M --runtime=5 \
	--ramp_time=1 --modes=kernel-direct,wtio-writethrough,wtio-writethrough-noserial \
	--xfs-size=12G
run cached-read --suite=cached-read --runtime=3 --ramp_time=1
# The image is allocated in full in /dev/shm (RAM): 6G holds these files.
run sustained --suite=sustained --runtime=20 --ramp_time=2 --xfs-size=6G
run smallfiles --suite=smallfiles
# Streaming 4x wtio's budget with drop-behind, per-second throughput.
run dontcache-stream --suite=dontcache-stream --size=4G --cache-size=1G \
	--runtime=20 --xfs-size=6G
# Stripe-aligned against unaligned sequential writes on a striped image.
for align in 1 0; do
	run stripe-align$align --rw=write --bs=1M --size=1G --runtime=5 \
		--ramp_time=1 --stripe=64k,4 --stripe-align=$align --repeat=3 \
		--modes=kernel-direct,wtio-writeback,wtio-writethrough
done
if [ -n "${PLAN:-}" ]; then
	echo "total: ~$total_est s of measuring ($((total_est / 60)) min), plus file preparation"
	echo "and mkfs per run, the microbenchmark and the fio check (QUICK=1 shows the overhead)"
	exit 0
fi
if wanted microbench && [ -z "${QUICK:-}" ]; then
	echo "== microbench (cached reads and write-back writes, ext4 here)"
	"$micro" "$out" 16 3 | tee "$out/microbench-16M.txt"
	"$micro" "$out" 256 3 | tee "$out/microbench-256M.txt"
fi
if wanted compare-fio && [ -z "${QUICK:-}" ]; then
	echo "== fio agreement"
	"$here/bench/compare-fio.sh" --bench="$bench" --directory="$out" |
		tee "$out/compare-fio.txt" || true
fi
if command -v gnuplot >/dev/null; then
	# One folder per run: several runs share an experiment's name.
	for j in "$out"/*.json; do
		"$here/bench/plot" "$j" "$out/plots/$(basename "$j" .json)" >/dev/null 2>&1 || true
	done
fi
# "RUN Verdict EXPERIMENT: ..." for every run that has a reference.
grep -H '^Verdict' "$out"/*.txt 2>/dev/null | sed 's|^.*/\([^/]*\)\.txt:|\1: |' \
	> "$out/verdicts.txt" || true
echo "verdicts:"
cat "$out/verdicts.txt"
echo "results in $out"
