#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/raid-stripe.sh - the stripe experiment of the iomap thread ("align
# writeback to RAID stripe boundaries": sequential buffered writes, +2.3%
# on an 8-disk md RAID-6) on wtio's user-space RAID, where a write of part
# of a stripe pays read-modify-write: sequential buffered writes through
# wtio-writeback, writeback cut at chunks (wtio's stripe unit as XFS on md
# reports it), cut at whole stripes (as the patch cuts at io_opt), and not
# cut (WTIO_CONFIG_NO_STRIPE_ALIGN). Prints each run's MiB/s and the
# members' I/O: reads are what partial stripes cost.
#
#   bench/raid-stripe.sh [WTIO-BENCH]
#
# Environment (defaults are a quick functional run; measure with a bigger
# SIZE on a quiet machine): RAID=LEVEL,DISKS,CHUNK (6,8,64k, the thread's
# array), SIZE (64M), BS (1M), CACHE (16M: smaller than SIZE, so writeback
# runs while writing), RUNTIME (0: until SIZE is written), DIR (.: where
# the size-only placeholder files go; the members go to /dev/shm).
# Exit 0, 1 when a run failed, 2 on bad use.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
bench=${1:-$here/build/tools/wtio-bench/wtio-bench}
raid=${RAID:-6,8,64k}
size=${SIZE:-64M}
bs=${BS:-1M}
cache=${CACHE:-16M}
runtime=${RUNTIME:-0}
dir=${DIR:-.}
[ -x "$bench" ] || { echo "raid-stripe.sh: no wtio-bench at $bench (build first)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "stripe experiment: user-space RAID $raid (LEVEL,DISKS,CHUNK), sequential"
echo "buffered writes, bs=$bs, size=$size, wtio cache $cache, wtio-writeback"
echo "reference (md RAID-6, 8 disks, XFS, io_uring): 601.0 -> 614.5 MB/s, +2.3%"
printf '%-34s %9s %12s %12s %8s %8s\n' "writeback" "MiB/s" "member-reads" "member-writes" \
	"whole" "partial"
rc=0
for v in chunk stripe none; do
	case $v in
	chunk) args=(--stripe-align=1 --raid-su=chunk); what="cut at chunks (su=chunk)" ;;
	stripe) args=(--stripe-align=1 --raid-su=stripe); what="cut at whole stripes (su=width)" ;;
	none) args=(--stripe-align=0); what="not cut (NO_STRIPE_ALIGN)" ;;
	esac
	if ! "$bench" --raid="$raid" "${args[@]}" --rw=write --bs="$bs" --size="$size" \
		--runtime="$runtime" --cache-size="$cache" --modes=wtio-writeback \
		--directory="$dir" --no-progress >"$tmp/out" 2>"$tmp/err"; then
		echo "raid-stripe.sh: the $v run failed:" >&2
		cat "$tmp/err" "$tmp/out" >&2
		rc=1
		continue
	fi
	mib=$(awk '$1 == "wtio-writeback" && $3 ~ /^[0-9.]+$/ { print $3; exit }' "$tmp/out")
	# raid: MODE: member reads R (K KiB), writes W (K KiB); stripes written
	# whole F, in part P (...)
	line=$(grep '^raid: wtio-writeback:' "$tmp/err" | tail -1)
	reads=$(sed -n 's/.*member reads \([0-9]*\).*/\1/p' <<<"$line")
	writes=$(sed -n 's/.*, writes \([0-9]*\).*/\1/p' <<<"$line")
	whole=$(sed -n 's/.*written whole \([0-9]*\).*/\1/p' <<<"$line")
	part=$(sed -n 's/.*in part \([0-9]*\).*/\1/p' <<<"$line")
	printf '%-34s %9s %12s %12s %8s %8s\n' "$what" "${mib:-?}" "${reads:-?}" "${writes:-?}" \
		"${whole:-?}" "${part:-?}"
	[ -n "$mib" ] && [ -n "$reads" ] || rc=1
done
exit $rc
