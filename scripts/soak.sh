#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# soak.sh - hours of wtio-fsx over many seeds and configurations (not CI).
#
#   scripts/soak.sh [--hours H] [--ops N] [--jobs J] [--seed BASE]
#                   [--fsx PATH] [--dir DIR] [--no-images]
#
# Runs wtio-fsx again and again, each run with a new seed (BASE + run
# number; BASE from the clock unless given, printed) and the next
# configuration of a matrix: folio 4k/16k/64k/256k/1m x cache 16/32/128
# folios x backend io_uring/psync x atomic writes on/off x filesystem
# (DIR, default a fresh directory under the current one; as root also an
# XFS and an ext4 image on loop devices over /dev/shm, unless
# --no-images). Stops after N operations (default 10^7) or H hours
# (default 12), whichever comes first; J runs at a time (default 1). A run that
# does not end in 600 s counts as a hang. Prints a progress line every
# minute, and at the end what it covered: operations, runs, seeds,
# configurations, and each failure with the command that reproduces it.
# Exit 0 when nothing failed, 1 otherwise. Logs of failed runs stay in
# the printed log directory.
set -uo pipefail

hours=12
target_ops=10000000
jobs=1
base=""
fsx=""
dir=""
images=1

usage() {
	sed -n '4,20p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

while [ $# -gt 0 ]; do
	case $1 in
	--hours) hours=$2; shift 2 ;;
	--ops) target_ops=$2; shift 2 ;;
	--jobs|-j) jobs=$2; shift 2 ;;
	--seed) base=$2; shift 2 ;;
	--fsx) fsx=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	--no-images) images=0; shift ;;
	-h|--help) usage 0 ;;
	*) echo "soak.sh: unknown option $1" >&2; usage ;;
	esac
done

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "$fsx" ]; then
	for b in "$top"/build/tools/wtio-fsx/wtio-fsx "$top"/build-*/tools/wtio-fsx/wtio-fsx; do
		[ -x "$b" ] && { fsx=$b; break; }
	done
fi
[ -n "$fsx" ] && [ -x "$fsx" ] || { echo "soak.sh: no wtio-fsx (build first, or --fsx PATH)" >&2; exit 2; }
[ -n "$base" ] || base=$(( $(date +%s) % 1000000007 ))
case $hours in ''|*[!0-9.]*) echo "soak.sh: bad --hours" >&2; exit 2 ;; esac
case $target_ops in ''|*[!0-9]*) echo "soak.sh: bad --ops" >&2; exit 2 ;; esac
case $jobs in ''|*[!0-9]*|0) echo "soak.sh: bad --jobs" >&2; exit 2 ;; esac
end_s=$(( $(date +%s) + $(awk -v h="$hours" 'BEGIN { printf "%d", h * 3600 }') ))

state=$(mktemp -d "${TMPDIR:-/tmp}/wtio-soak.XXXXXX")
results=$state/results		# one line per finished run
mounts=()
images_made=()
cleanup() {
	local m
	for m in "${mounts[@]}"; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		rmdir "$m" 2>/dev/null
	done
	for m in "${images_made[@]}"; do
		rm -f "$m"
	done
	[ -n "${own_dir:-}" ] && rm -rf "$own_dir"
}
trap cleanup EXIT
trap 'touch "$state/stop"; wait; exit 1' INT TERM HUP

# Filesystems: "name:dir".
fss=()
if [ -z "$dir" ]; then
	own_dir=$(mktemp -d "$PWD/wtio-soak.XXXXXX")
	dir=$own_dir
fi
fss+=("local:$dir")
if [ $images -eq 1 ] && [ "$(id -u)" -eq 0 ] && [ -e /dev/loop-control ]; then
	for t in xfs ext4; do
		case $t in
		xfs) mkfs=(mkfs.xfs -f -q) ;;
		ext4) mkfs=(mkfs.ext4 -q -F) ;;
		esac
		command -v "${mkfs[0]}" >/dev/null 2>&1 || { echo "soak.sh: no ${mkfs[0]}: no $t image"; continue; }
		img=$(mktemp /dev/shm/wtio-soak-$t.XXXXXX) || continue
		images_made+=("$img")
		truncate -s 2G "$img"
		m=$(mktemp -d /tmp/wtio-soak-$t.XXXXXX)
		if "${mkfs[@]}" "$img" >/dev/null 2>&1 && mount -t $t -o loop "$img" "$m"; then
			mounts+=("$m")
			fss+=("$t:$m")
		else
			echo "soak.sh: cannot mount a $t image; not used"
			rmdir "$m"
		fi
	done
else
	echo "soak.sh: no XFS/ext4 images (--no-images, not root or no loop devices)"
fi

folios=(4k 16k 64k 256k 1m)
folio_b=(4096 16384 65536 262144 1048576)
cmults=(16 32 128)
backends=(io_uring psync)
atomics=(on off)
nconf=$(( ${#folios[@]} * ${#cmults[@]} * ${#backends[@]} * ${#atomics[@]} * ${#fss[@]} ))

# config K -> "fs|options" (every combination in turn, fs fastest).
config() {
	local k=$1 i fsi fo cm be at fb cache len op n
	fsi=$(( k % ${#fss[@]} )); i=$(( k / ${#fss[@]} ))
	fo=$(( i % ${#folios[@]} )); i=$(( i / ${#folios[@]} ))
	be=$(( i % ${#backends[@]} )); i=$(( i / ${#backends[@]} ))
	at=$(( i % ${#atomics[@]} )); i=$(( i / ${#atomics[@]} ))
	cm=$(( i % ${#cmults[@]} ))
	fb=${folio_b[$fo]}
	cache=$(( fb * ${cmults[$cm]} ))
	# The file spans 2-8x the cache (eviction), ops up to a quarter of it.
	len=$(( cache * (2 + k % 7) ))
	[ $len -gt $((32 << 20)) ] && len=$((32 << 20))
	op=$(( len / 4 ))
	[ $op -gt $((4 << 20)) ] && op=$((4 << 20))
	# About the same time per run: fewer ops for big folios.
	n=$(( 20000 * 4096 / fb ))
	[ $n -lt 1000 ] && n=1000
	[ $n -gt 10000 ] && n=10000
	local opts="-f ${folios[$fo]} -c $cache -l $len -o $op -N $n -b ${backends[$be]}"
	[ "${atomics[$at]}" = off ] && opts="$opts -X atomic"
	echo "${fss[$fsi]%%:*}|${fss[$fsi]#*:}|$opts"
}

# One worker: runs slot, slot + jobs, ... until told to stop.
worker() {
	local slot=$1 k=$1 c fs d opts seed out rc n
	while [ ! -e "$state/stop" ]; do
		c=$(config $(( k % nconf )))
		fs=${c%%|*}; c=${c#*|}; d=${c%%|*}; opts=${c#*|}
		seed=$(( (base + k) % 4294967291 + 1 ))
		out=$state/run.$k.log
		# shellcheck disable=SC2086
		timeout -k 10 600 "$fsx" -q -S "$seed" $opts "$d/soak.$k" >"$out" 2>&1
		rc=$?
		n=$(sed -n 's/.*: \([0-9]*\) ops OK.*/\1/p' "$out" | tail -1)
		[ $rc -eq 0 ] || n=$(grep -o 'at operation [0-9]*' "$out" | head -1 | grep -o '[0-9]*$')
		echo "$rc ${n:-0} $seed $fs|$opts|$fsx -S $seed $opts $d/soak.$k" >> "$results"
		[ $rc -eq 0 ] && rm -f "$out"
		rm -f "$d/soak.$k"
		k=$(( k + jobs ))
	done
}

echo "soak.sh: wtio-fsx $fsx; seed base $base (--seed $base repeats this soak)"
echo "soak.sh: $nconf configurations over: ${fss[*]%%:*}; $jobs at a time;" \
	"until $hours h or $target_ops ops; logs in $state"
start=$(date +%s)
: > "$results"
for ((j = 0; j < jobs; j++)); do
	worker "$j" &
done

sum_ops() { awk '{ s += $2 } END { print s + 0 }' "$results"; }
last_print=$start
while :; do
	sleep 5
	now=$(date +%s)
	ops=$(sum_ops)
	if [ "$ops" -ge "$target_ops" ] || [ "$now" -ge "$end_s" ]; then
		touch "$state/stop"
		break
	fi
	if [ $((now - last_print)) -ge 60 ]; then
		last_print=$now
		runs=$(wc -l < "$results")
		fails=$(awk '$1 != 0' "$results" | wc -l)
		echo "soak.sh: $(( (now - start) / 60 )) min: $runs runs, $ops ops" \
			"($(( ops / (now - start + 1) )) ops/s), $fails failed"
	fi
done
echo "soak.sh: stopping: waiting for the runs in flight"
wait

now=$(date +%s)
runs=$(wc -l < "$results")
ops=$(sum_ops)
fails=$(awk '$1 != 0' "$results" | wc -l)
confs=$(cut -d'|' -f1-2 "$results" | awk '{ $1 = $2 = $3 = ""; print }' | sort -u | wc -l)
echo
echo "soak.sh: covered in $(( (now - start) / 60 )) min: $ops operations in $runs runs," \
	"seeds $(( base % 4294967291 + 1 )) to $(( (base + runs - 1) % 4294967291 + 1 )) ($runs seeds)," \
	"$confs of $nconf configurations"
for dim in "filesystems: ${fss[*]%%:*}" "folio sizes: ${folios[*]}" \
	   "caches (folios): ${cmults[*]}" "backends: ${backends[*]}" \
	   "atomic writes: ${atomics[*]}"; do
	echo "  $dim"
done
[ "$ops" -lt 10000000 ] && echo "  (fewer than 10^7 operations: run longer for a full soak)"
if [ "$fails" -ne 0 ]; then
	echo "soak.sh: $fails FAILED runs (rc, seed, filesystem, reproduce command; log in $state):"
	awk '$1 != 0 { rc = $1; seed = $3; $1 = $2 = $3 = ""; sub(/^ +/, "");
		n = split($0, p, "|");
		printf "  rc %s (%s) seed %s: %s%s\n", rc, rc == 124 || rc == 137 ? "hang" : "failure", seed, p[1] ": ", p[3] }' "$results"
	echo "soak.sh: (a failure on xfs/ext4 reproduces on any such filesystem; add it to tests/fsx_seeds)"
	exit 1
fi
rm -rf "$state"
echo "soak.sh: PASS"
