#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench/shim-cp-dd.sh [BUILD] [SIZE_MIB] [MODES] - unmodified programs
# streaming a large file under the shim (issue 17, target 3): cp
# --reflink=never (read/write, no copy_file_range) and dd bs=1M of one
# file on a fresh XFS image on a loop device over /dev/shm (root),
# bare, under Debian's nocache(1) (mode "nocache", the tool a user would
# pick for drop-behind; left out when not installed) and under wtio-run
# in each mode, one after the other (a mode written MODE/SIZE, e.g.
# dontcache/64k, runs with --folio-size=SIZE --no-large-folios: every
# file in folios of SIZE; MODE/small with --no-large-folios: every file
# in 4K folios; MODE and MODE/large: wtio-run's default, each file
# chooses its folio size). REPEAT=N runs the whole list N
# times (alternating, for medians). BEFORE=BUILD2 runs every wtio mode
# with BUILD2's wtio-run too, right before BUILD's ("M before"), for
# before/after ratios within one run. Prints per
# run the elapsed seconds of the command, the seconds of the sync that
# follows (bare cp leaves its data dirty in the kernel's page cache, wtio
# writes it at close) and, where perf can count them, the io_uring_enter
# and read system calls the run made. The kernel's page cache is dropped
# before each run, so every run reads the source from the device.
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
build=${1:-$here/build}
size=${2:-2048}
modes=${3:-"bare nocache writeback writethrough dontcache"}
repeat=${REPEAT:-1}
run=$build/preload/wtio-run
[ -x "$run" ] || { echo "no $run: build first" >&2; exit 2; }
before=${BEFORE:-}
[ -z "$before" ] || [ -x "$before/preload/wtio-run" ] ||
	{ echo "no $before/preload/wtio-run" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "needs root (loop device, mount)" >&2; exit 77; }

img=/dev/shm/wtio-cpdd.$$.img
mnt=$(mktemp -d /tmp/wtio-cpdd.XXXXXX)
dev=
cleanup() {
	umount "$mnt" 2>/dev/null || true
	[ -n "$dev" ] && losetup -d "$dev" 2>/dev/null || true
	rm -f "$img" "$mnt.runs"
	rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT
truncate -s $((size * 3 + 1024))M "$img"
dev=$(losetup -f --show --direct-io=on "$img")
mkfs.xfs -q -f "$dev"
mount "$dev" "$mnt"
dd if=/dev/urandom of="$mnt/src" bs=1M count="$size" status=none
sync

counting=
if perf stat -x, -e syscalls:sys_enter_io_uring_enter true 2>/dev/null; then
	counting=1
fi

one() {		# one <label> <cmd...>
	local label=$1 t0 t1 t2 ev=
	shift
	rm -f "$mnt/dst"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s.%N)
	if [ -n "$counting" ]; then
		ev=$(perf stat -x, -e syscalls:sys_enter_io_uring_enter \
			-e syscalls:sys_enter_read -- "$@" 2>&1 >/dev/null |
			awk -F, '/io_uring_enter/ {u=$1} /sys_enter_read/ {r=$1}
				 END {printf "io_uring_enter %s read %s", u, r}')
	else
		"$@"
	fi
	t1=$(date +%s.%N)
	sync
	t2=$(date +%s.%N)
	cmp -s "$mnt/src" "$mnt/dst" || { echo "$label: copy differs" >&2; exit 1; }
	printf '%-28s %7.2f s  + sync %5.2f s  %s\n' "$label" \
		"$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" "$ev" |
		tee -a "$mnt.runs"
}

echo "file $size MiB on XFS (loop, direct-io, /dev/shm); $(nproc) CPUs"
for ((r = 1; r <= repeat; r++)); do
list=
for mode in $modes; do
	case $mode in
	bare|nocache) list="$list $mode" ;;
	*) list="$list${before:+ $mode@before} $mode" ;;
	esac
done
for mode in $list; do
	wr=$run
	case $mode in
	*@before) wr=$before/preload/wtio-run; mode=${mode%@before} ;;
	esac
	if [ "$mode" = bare ]; then
		pre=()
	elif [ "$mode" = nocache ]; then
		command -v nocache >/dev/null || continue
		pre=(nocache)
	else
		fo=()
		case $mode in
		*/large) fo=() ;;	# the default: each file chooses
		*/small) fo=(--no-large-folios) ;;
		*/*) fo=(--folio-size="${mode#*/}" --no-large-folios) ;;
		esac
		pre=("$wr" --mode="${mode%%/*}" "${fo[@]}" --paths="$mnt" --)
	fi
	label=$mode
	[ "$wr" = "$run" ] || label="$mode before"
	one "cp $label" "${pre[@]}" cp --reflink=never "$mnt/src" "$mnt/dst"
	one "dd bs=1M $label" "${pre[@]}" dd if="$mnt/src" of="$mnt/dst" bs=1M \
		status=none
done
done
# The summary: per run label, the median [min-max] of command + sync.
echo "median [min-max] of command + sync, $repeat repeats:"
awk '{ n = split($0, w, /  +/); t = w[2] + 0; sub(/ s$/, "", w[2]);
       s = $0; sub(/.*\+ sync +/, "", s); t += s + 0;
       print w[1] "\t" t }' "$mnt.runs" |
	sort -t "$(printf '\t')" -k1,1 -k2,2n |
	awk -F '\t' '{ v[$1] = v[$1] " " $2; c[$1]++ }
	     END { for (k in v) { n = split(substr(v[k], 2), a, " ");
		   printf "  %-28s %5.2f [%.2f-%.2f]\n", k, a[int((n + 1) / 2)],
			  a[1], a[n] } }' | sort
