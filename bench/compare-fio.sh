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
#                        [--runtime=SECONDS] [--size=SIZE]
#
# Traps this script avoids:
#  - fio 3.33's "uncached" option is sent as flag 0x40, which is RWF_ATOMIC
#    on current kernels, not RWF_DONTCACHE: it is never used here.
#  - fio's default invalidate=1 drops the file's cache before a run; the
#    cached-read workload passes --invalidate=0 (and pre-reads the file).
#  - the first run after a file is laid out is slow: every run has a ramp.
#  - fio reaps one completion per io_getevents by default; wtio-bench's
#    libaio engine takes all that are ready (up to the depth), so fio gets
#    --iodepth_batch_complete_max=IODEPTH, the same reaping (fio measured
#    914 against 1152 MiB/s here for 4k O_DIRECT reads at qd16 without it).
#  - fio invalidates the file's cache again when its ramp ends, so its
#    buffered write figures would measure writes into uncached pages (4x
#    slower here); the buffered rows pass --invalidate=0 to fio, matching
#    wtio-bench, which drops caches only between modes, before the ramp.
# Exit status: 0 all agree, 1 some disagree (or a run failed), 2 usage.
set -uo pipefail

here=$(dirname "$(readlink -f "$0")")
bench=
dir=$PWD
runtime=4
size=256M
for a in "$@"; do
	case "$a" in
	--bench=*) bench=${a#*=} ;;
	--directory=*) dir=${a#*=} ;;
	--runtime=*) runtime=${a#*=} ;;
	--size=*) size=${a#*=} ;;
	-h|--help) sed -n '3,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "compare-fio: unknown argument $a" >&2; exit 2 ;;
	esac
done
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
trap 'rm -rf "$work"' EXIT INT TERM
ramp=1

# name | rw | bs | engine | iodepth | direct | extra fio | extra wtio-bench
workloads=(
	"randwrite-4k-buffered-psync|randwrite|4k|psync|1|0|--overwrite=1 --invalidate=0|--overwrite"
	"randwrite-4k-direct-psync|randwrite|4k|psync|1|1|--overwrite=1|--overwrite"
	"randread-4k-direct-libaio-qd16|randread|4k|libaio|16|1||"
	"randwrite-4k-direct-libaio-qd16|randwrite|4k|libaio|16|1|--overwrite=1|--overwrite"
	"randwrite-16k-buffered-libaio-qd16|randwrite|16k|libaio|16|0|--overwrite=1 --invalidate=0|--overwrite"
	"randread-4k-cached-psync|randread|4k|psync|1|0|--invalidate=0 --pre_read=1|--invalidate=0 --pre_read"
)

printf '%-36s %12s %12s %8s  %s\n' workload "fio MiB/s" "bench MiB/s" diff verdict
bad=0
for w in "${workloads[@]}"; do
	IFS='|' read -r name rw bs eng qd direct xfio xbench <<<"$w"
	mode=kernel-buffered
	[ "$direct" = 1 ] && mode=kernel-direct
	# fio
	# shellcheck disable=SC2086
	fio_json=$(fio --name=cmp --directory="$work" --filename=fio.dat --rw="$rw" --bs="$bs" \
		--size="$size" --ioengine="$eng" --iodepth="$qd" --direct="$direct" \
		--runtime="$runtime" --time_based --ramp_time="$ramp" --randrepeat=1 \
		--iodepth_batch_complete_max="$qd" \
		--output-format=json $xfio 2>/dev/null)
	fio_mib=$(python3 -c '
import json, sys
j = json.loads(sys.stdin.read())["jobs"][0]
k = "read" if sys.argv[1].endswith("read") else "write"
print("%.1f" % (j[k]["bw_bytes"] / 1048576.0))' "$rw" <<<"$fio_json" 2>/dev/null || echo NaN)
	rm -f "$work/fio.dat"
	# wtio-bench
	# shellcheck disable=SC2086
	b_json=$("$bench" --directory="$work" --no-progress --output-format=json --rw="$rw" \
		--bs="$bs" --size="$size" --ioengine="$eng" --iodepth="$qd" \
		--runtime="$runtime" --time_based --ramp_time="$ramp" --modes="$mode" $xbench 2>/dev/null)
	b_mib=$(python3 -c '
import json, sys
r = json.loads(sys.stdin.read())["experiments"][0]["results"][0]
print("%.1f" % r["mib_s"] if r["status"] == "ok" else "NaN")' <<<"$b_json" 2>/dev/null || echo NaN)
	verdict=$(python3 -c '
import sys, math
a, b = float(sys.argv[1]), float(sys.argv[2])
if math.isnan(a) or math.isnan(b) or a <= 0:
    print("nan FAILED-RUN")
else:
    d = (b / a - 1) * 100
    print("%+.1f%% %s" % (d, "agree" if abs(d) <= 15 else "DISAGREE"))' "$fio_mib" "$b_mib")
	printf '%-36s %12s %12s %8s  %s\n' "$name" "$fio_mib" "$b_mib" ${verdict% *} ${verdict#* }
	case "$verdict" in *agree) [ "${verdict#* }" = agree ] || bad=1 ;; *) bad=1 ;; esac
done
[ $bad = 0 ] && echo "all within 15%" || echo "some figures differ by more than 15% (or a run failed)"
exit $bad
