#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/raid-stripe.sh - the stripe experiment of the iomap thread ("align
# writeback to RAID stripe boundaries": sequential buffered writes, +2.3%
# on an 8-disk md RAID-6) on wtio's user-space RAID, where a write of part
# of a stripe pays read-modify-write: sequential buffered writes through
# wtio-writeback, with the array's geometry (wtio aligns writeback to the
# stripe width, as the patch aligns to io_opt), one chunk per I/O
# (writeback cut at chunks: what wtio did before it aligned to the width),
# and not cut (WTIO_CONFIG_NO_STRIPE_ALIGN: the kernel before the patch).
# The three alternate (A B C A B C ...) REPEAT times; it prints each one's
# MiB/s median [min-max] and the members' I/O of its runs (a single number
# when every run gave the same): reads are what partial stripes cost.
#
#   bench/raid-stripe.sh [WTIO-BENCH]
#
# Environment (defaults are a quick functional run; measure with a bigger
# SIZE on a quiet machine): RAID=LEVEL,DISKS,CHUNK (6,8,64k, the thread's
# array), SIZE (64M), BS (1M), CACHE (16M: smaller than SIZE, so writeback
# runs while writing), RUNTIME (0: until SIZE is written), REPEAT (1), DIR
# (.: where the size-only placeholder files go; the members go to
# /dev/shm).
# Exit 0, 1 when a run failed, 2 on bad use.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
bench=${1:-$here/build/tools/wtio-bench/wtio-bench}
raid=${RAID:-6,8,64k}
size=${SIZE:-64M}
bs=${BS:-1M}
cache=${CACHE:-16M}
runtime=${RUNTIME:-0}
repeat=${REPEAT:-1}
dir=${DIR:-.}
[ -x "$bench" ] || { echo "raid-stripe.sh: no wtio-bench at $bench (build first)" >&2; exit 2; }
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "raid-stripe.sh: REPEAT=$repeat is not a count" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

variants=(width chunk none)
declare -A what=(
	[width]="aligned to the stripe width"
	[chunk]="cut at chunks (one chunk per I/O)"
	[none]="not cut (NO_STRIPE_ALIGN)"
)
declare -A args=(
	[width]="--stripe-align=1"
	[chunk]="--stripe-align=1 --raid-cut=chunk"
	[none]="--stripe-align=0"
)

echo "stripe experiment: user-space RAID $raid (LEVEL,DISKS,CHUNK) over member files"
echo "in /dev/shm, sequential buffered writes, bs=$bs, size=$size, wtio cache $cache,"
echo "wtio-writeback, $repeat run(s) of each, alternating"
echo "reference (md RAID-6, 8 disks, XFS, io_uring): 601.0 -> 614.5 MB/s, +2.3%"
rc=0
for ((r = 1; r <= repeat; r++)); do
	for v in "${variants[@]}"; do
		# shellcheck disable=SC2086
		if ! "$bench" --raid="$raid" ${args[$v]} --rw=write --bs="$bs" --size="$size" \
			--runtime="$runtime" --cache-size="$cache" --modes=wtio-writeback \
			--directory="$dir" --no-progress >"$tmp/out" 2>"$tmp/err"; then
			echo "raid-stripe.sh: run $r of '$v' failed:" >&2
			cat "$tmp/err" "$tmp/out" >&2
			rc=1
			continue
		fi
		mib=$(awk '$1 == "wtio-writeback" && $3 ~ /^[0-9.]+$/ { print $3; exit }' "$tmp/out")
		# raid: MODE: member reads R (K KiB), writes W (K KiB); stripes
		# written whole F, in part P (...)
		line=$(grep '^raid: wtio-writeback:' "$tmp/err" | tail -1)
		reads=$(sed -n 's/.*member reads \([0-9]*\).*/\1/p' <<<"$line")
		writes=$(sed -n 's/.*, writes \([0-9]*\).*/\1/p' <<<"$line")
		whole=$(sed -n 's/.*written whole \([0-9]*\).*/\1/p' <<<"$line")
		part=$(sed -n 's/.*in part \([0-9]*\).*/\1/p' <<<"$line")
		if [ -z "$mib" ] || [ -z "$reads" ]; then
			echo "raid-stripe.sh: run $r of '$v': no figures in its output:" >&2
			cat "$tmp/err" "$tmp/out" >&2
			rc=1
			continue
		fi
		echo "$mib ${reads:-0} ${writes:-0} ${whole:-0} ${part:-0}" >>"$tmp/$v"
	done
done

# Median (the lower middle of an even count: a measured value) [min-max]
# of column $1; for the counters the value, or min-max when runs differ.
stat() {
	sort -g -k"$1","$1" "$2" | awk -v c="$1" -v fig="$3" '
		{ v[NR] = $c }
		END {
			if (!NR) { print "?"; exit }
			med = v[int((NR + 1) / 2)]
			if (fig) printf "%.1f [%.1f-%.1f]\n", med, v[1], v[NR]
			else if (v[1] == v[NR]) print v[1]
			else printf "%s-%s\n", v[1], v[NR]
		}'
}
printf '%-36s %24s %12s %13s %8s %8s\n' "writeback" "MiB/s median [min-max]" \
	"member-reads" "member-writes" "whole" "partial"
for v in "${variants[@]}"; do
	[ -s "$tmp/$v" ] || { printf '%-36s %24s\n' "${what[$v]}" "failed"; continue; }
	printf '%-36s %24s %12s %13s %8s %8s\n' "${what[$v]}" "$(stat 1 "$tmp/$v" 1)" \
		"$(stat 2 "$tmp/$v" 0)" "$(stat 3 "$tmp/$v" 0)" "$(stat 4 "$tmp/$v" 0)" \
		"$(stat 5 "$tmp/$v" 0)"
done
exit $rc
