#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/compare-fio.sh - run Debian's fio and wtio-bench on the same
# workloads (kernel-buffered and kernel-direct, psync and libaio) and show
# whether their figures agree within 15%. wtio-bench's kernel modes are
# meant to be the same system calls fio makes; if they disagree, the tool
# is wrong.
#
#   bench/compare-fio.sh [--bench=PATH/wtio-bench] [--directory=DIR]
#                        [--runtime=SECONDS] [--size=SIZE] [--repeat=N]
#
# Each workload runs N times (5) in each tool, alternating fio and
# wtio-bench; each fio run is paired with the wtio-bench run beside it and
# the median of the pairs' ratios is the verdict's figure. Each tool's
# median and range are printed too: on this VM one run of either can be
# 30% off its neighbours.
#
# Both tools start from the same state: the file fully written, synced,
# and (as root) the page cache dropped; then a 1 s ramp, then the window.
# fio lays its file out in a --create_only pass first, so its own layout
# does not leave the file cached and dirty for the measured run.
#
# Traps this script avoids:
#  - fio 3.33's "uncached" option is sent as flag 0x40, which is RWF_ATOMIC
#    on current kernels, not RWF_DONTCACHE: it is never used here.
#  - fio's default invalidate=1 drops the file's cache before a run and
#    again when its ramp ends: every row passes --invalidate=0 and the
#    script drops caches itself, before the run, for both tools.
#  - fio reaps one completion per io_getevents by default; wtio-bench's
#    libaio engine takes all that are ready (up to the depth), so fio gets
#    --iodepth_batch_complete_max=IODEPTH, the same reaping (fio measured
#    914 against 1152 MiB/s here for 4k O_DIRECT reads at qd16 without it).
#  - fio's own work per request (clock reads for slat/clat/lat, random
#    map, per-process stats) costs ~250 ns, a fifth of a cached 4k read:
#    fio runs with --thread --norandommap --gtod_reduce=1 (offsets then
#    drawn uniformly with replacement, as wtio-bench draws them). What is
#    left of each harness's cost is measured first with both tools' null
#    engines and printed; the "net" column compares the time per request
#    with that cost taken out of both sides. A row whose raw figures
#    differ by more than 15% but whose net figures do not is marked
#    "agree-net", never plain "agree".
#  - fio's buffers for buffered I/O are only malloc-aligned, so a 4k copy
#    touches two pages, and it scrambles each write buffer; wtio-bench's
#    are page-aligned and written as they are: fio gets --iomem_align=4096
#    --scramble_buffers=0, the same memory on both sides.
# Exit status: 0 all agree, 1 some disagree (or a run failed), 2 usage.
set -uo pipefail

here=$(dirname "$(readlink -f "$0")")
bench=
dir=$PWD
runtime=3
size=256M
repeat=5
for a in "$@"; do
	case "$a" in
	--bench=*) bench=${a#*=} ;;
	--directory=*) dir=${a#*=} ;;
	--runtime=*) runtime=${a#*=} ;;
	--size=*) size=${a#*=} ;;
	--repeat=*) repeat=${a#*=} ;;
	-h|--help) sed -n '3,47p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "compare-fio: unknown argument $a" >&2; exit 2 ;;
	esac
done
case "$repeat" in ''|*[!0-9]*|0) echo "compare-fio: --repeat must be a positive number" >&2; exit 2 ;; esac
case "$runtime" in ''|*[!0-9]*|0) echo "compare-fio: --runtime must be whole seconds" >&2; exit 2 ;; esac
if [ -z "$bench" ]; then
	for c in "$here/../build/tools/wtio-bench/wtio-bench" "$(command -v wtio-bench || true)"; do
		[ -n "$c" ] && [ -x "$c" ] && { bench=$c; break; }
	done
fi
[ -x "$bench" ] || { echo "compare-fio: wtio-bench not found; pass --bench=PATH" >&2; exit 2; }
command -v fio >/dev/null || { echo "compare-fio: fio not found (apt-get install fio)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "compare-fio: python3 needed" >&2; exit 2; }
[ -d "$dir" ] && [ -w "$dir" ] || { echo "compare-fio: $dir is not a writable directory" >&2; exit 2; }

work=$(mktemp -d "$dir/compare-fio.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
ramp=1
fio_lean="--thread --norandommap --gtod_reduce=1 --randrepeat=1 --invalidate=0
	--iomem_align=4096 --scramble_buffers=0"

# What wtio-bench does before each mode: sync, and drop caches as root.
drop_caches() {
	sync
	[ "$(id -u)" = 0 ] && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
	return 0
}

# fio_run RW BS ENGINE QD DIRECT EXTRA... -> MiB/s and IOPS, or "NaN NaN"
fio_run() {
	local rw=$1 bs=$2 eng=$3 qd=$4 direct=$5; shift 5
	local common=(--name=cmp --directory="$work" --filename=fio.dat --rw="$rw"
		--bs="$bs" --size="$size" --ioengine="$eng" --iodepth="$qd"
		--direct="$direct" --iodepth_batch_complete_max="$qd")
	if [ "$eng" != null ]; then
		# shellcheck disable=SC2086
		fio "${common[@]}" --create_only=1 $fio_lean "$@" >/dev/null 2>&1 ||
			{ echo "NaN NaN"; return; }
		drop_caches
	fi
	# shellcheck disable=SC2086
	fio "${common[@]}" --runtime="$runtime" --time_based --ramp_time="$ramp" \
		$fio_lean --output-format=json "$@" 2>/dev/null | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())["jobs"][0]
k = "read" if sys.argv[1].endswith("read") else "write"
print("%.1f %.0f" % (j[k]["bw_bytes"] / 1048576.0, j[k]["iops"]))' "$rw" 2>/dev/null ||
		echo "NaN NaN"
	rm -f "$work/fio.dat"
}

# bench_run RW BS ENGINE QD MODE EXTRA... -> MiB/s and IOPS, or "NaN NaN"
bench_run() {
	local rw=$1 bs=$2 eng=$3 qd=$4 mode=$5; shift 5
	"$bench" --directory="$work" --no-progress --output-format=json --rw="$rw" \
		--bs="$bs" --size="$size" --ioengine="$eng" --iodepth="$qd" \
		--runtime="$runtime" --time_based --ramp_time="$ramp" --modes="$mode" \
		"$@" 2>/dev/null | python3 -c '
import json, sys
r = json.loads(sys.stdin.read())["experiments"][0]["results"][0]
print("%.1f %.0f" % (r["mib_s"], r["iops"]) if r["status"] == "ok" else "NaN NaN")' 2>/dev/null ||
		echo "NaN NaN"
}

# The harnesses' own cost per request: median of N null-engine runs of 4k
# random reads (no I/O at all; fio's null engine and wtio-bench's).
hf=() hb=()
for ((i = 0; i < repeat; i++)); do
	hf+=("$(fio_run randread 4k null 1 0 | cut -d' ' -f2)")
	hb+=("$(bench_run randread 4k null 1 kernel-buffered | cut -d' ' -f2)")
done
read -r hf_ns hb_ns < <(python3 -c '
import statistics, sys
n = int(sys.argv[1])
def ns(v):
    v = [float(x) for x in v]
    return 1e9 / statistics.median(v) if all(x > 0 for x in v) else float("nan")
print("%.0f %.0f" % (ns(sys.argv[2:2 + n]), ns(sys.argv[2 + n:])))' "$repeat" "${hf[@]}" "${hb[@]}")
echo "harness cost per request (null engines): fio $hf_ns ns, wtio-bench $hb_ns ns"
echo "$repeat runs each, alternating, ${runtime} s after a ${ramp} s ramp, $size file, on $dir"
printf '%-35s %21s %21s %8s %8s  %s\n' workload "fio MiB/s [range]" \
	"bench MiB/s [range]" diff net verdict

# name | rw | bs | engine | iodepth | direct | extra fio | extra wtio-bench
workloads=(
	"randwrite-4k-buffered-psync|randwrite|4k|psync|1|0|--overwrite=1|--overwrite"
	"randwrite-4k-direct-psync|randwrite|4k|psync|1|1|--overwrite=1|--overwrite"
	"randread-4k-direct-libaio-qd16|randread|4k|libaio|16|1||"
	"randwrite-4k-direct-libaio-qd16|randwrite|4k|libaio|16|1|--overwrite=1|--overwrite"
	"randwrite-16k-buffered-libaio-qd16|randwrite|16k|libaio|16|0|--overwrite=1|--overwrite"
	"randread-4k-cached-psync|randread|4k|psync|1|0|--pre_read=1|--invalidate=0 --pre_read"
)

bad=0 net_only=0
for w in "${workloads[@]}"; do
	IFS='|' read -r name rw bs eng qd direct xfio xbench <<<"$w"
	mode=kernel-buffered
	[ "$direct" = 1 ] && mode=kernel-direct
	fr=() br=()
	for ((i = 0; i < repeat; i++)); do
		# Alternate who goes first, so a slow drift favours neither.
		# shellcheck disable=SC2086
		if ((i % 2 == 0)); then
			fr+=("$(fio_run "$rw" "$bs" "$eng" "$qd" "$direct" $xfio)")
			br+=("$(bench_run "$rw" "$bs" "$eng" "$qd" "$mode" $xbench)")
		else
			br+=("$(bench_run "$rw" "$bs" "$eng" "$qd" "$mode" $xbench)")
			fr+=("$(fio_run "$rw" "$bs" "$eng" "$qd" "$direct" $xfio)")
		fi
	done
	line=$(python3 -c '
import math, statistics, sys
name, hf, hb, n = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
runs = [tuple(float(x) for x in s.split()) for s in sys.argv[5:]]
fio, bench = runs[:n], runs[n:]
def summary(rs):
    mib = [r[0] for r in rs]
    iops = [r[1] for r in rs]
    if any(math.isnan(x) or x <= 0 for x in mib + iops):
        return None
    return statistics.median(mib), min(mib), max(mib), statistics.median(iops)
f, b = summary(fio), summary(bench)
cell = lambda s: "%.0f [%.0f-%.0f]" % s[:3] if s else "failed"
if not f or not b:
    print("%-35s %21s %21s %8s %8s  FAILED-RUN" % (name, cell(f), cell(b), "-", "-"))
    sys.exit()
# Each fio run is paired with the wtio-bench run next to it in time; the
# median of the pairs ratios is what drift on a shared machine moves least.
d = (statistics.median(y[0] / x[0] for x, y in zip(fio, bench)) - 1) * 100
# Time per request less each harness own cost, as a speed ratio.
def net_ratio(x, y):
    tf, tb = 1e9 / x[1] - hf, 1e9 / y[1] - hb
    return tf / tb if tf > 0 and tb > 0 else float("nan")
net = (statistics.median(net_ratio(x, y) for x, y in zip(fio, bench)) - 1) * 100
if abs(d) <= 15:
    verdict = "agree"
elif abs(net) <= 15:
    verdict = "agree-net"	# the rest is the harnesses, see the header
else:
    verdict = "DISAGREE"
print("%-35s %21s %21s %+7.1f%% %+7.1f%%  %s" % (name, cell(f), cell(b), d, net, verdict))' \
		"$name" "$hf_ns" "$hb_ns" "$repeat" "${fr[@]}" "${br[@]}")
	echo "$line"
	case "$line" in *" agree") ;; *" agree-net") net_only=1 ;; *) bad=1 ;; esac
done
if [ $bad = 1 ]; then
	echo "some figures differ by more than 15% (or a run failed)"
elif [ $net_only = 1 ]; then
	echo "all within 15%; rows marked agree-net only once each tool's own cost per request (null engine) is taken out"
else
	echo "all within 15%"
fi
exit $bad
