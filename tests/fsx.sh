#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fsx.sh WTIO_FSX [PART] - wtio-fsx with seeds that change from run to run.
#
# PART picks the filesystem and the configurations (one meson test each,
# so that each stays well under its timeout):
#   local  the build directory's filesystem (default)
#   xfs    an XFS image on a loop device over /dev/shm (RWF_ATOMIC here)
#   ext4   an ext4 image on a loop device over /dev/shm
#   seeds  the fixed regression entries of tests/fsx_seeds, every time
#   adaptive  the build directory's filesystem, every write adaptive
#          (--adaptive, per file and per context) in caches small enough
#          that writes cross the dirty limit: each run must have written
#          through some of them
#   keep   the build directory's filesystem, closed files kept with their
#          cache (--keep-closed, WTIO_CONFIG_KEEP_CLOSED): reopens find
#          the closed file's cache, the disk is checked after fsyncs and
#          after closes that end the context
#   tight  an XFS image kept nearly full (--tight: a filler file leaves
#          0..SIZE bytes free, changed every few dozen operations): writes
#          may be refused or cut short, and every one must change nothing
#          past its count; fsync, sync_file_range and close must succeed.
#          Each run must have had writes refused and cut, or the part
#          was not exercised (a failure).
#   tight_ext4  the same on an ext4 image, where a write that extends
#          the file and fails frees every block past its end, and a
#          direct write past the end may need a block only ext4's
#          reserve pool has (docs/DESIGN.md, "ext4 full to its last
#          blocks")
#
# The seeds come from the commit (git rev-parse HEAD of this tree) or,
# outside git, from the date, so each commit exercises new sequences and
# the same commit reproduces them. FSX_SEED_BASE=N overrides the base.
# Every failure prints the exact wtio-fsx command and the one-line fsx.sh
# rerun. Configurations cover folio sizes 4 KiB, 64 KiB and 1 MiB, caches
# from the minimum wtio-fsx accepts (16 folios) up, the io_uring and psync
# backends, with and without atomic writes. A run that does not end in
# FSX_TIMEOUT seconds (default 120) is a hang, and a failure. A part that
# cannot run here (no root, no loop device, no mkfs) exits 77 with the
# reason. At the end: runs, operations, seeds and configurations covered.
set -uo pipefail

fsx=$1
part=${2:-local}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmo=${FSX_TIMEOUT:-120}

if [ -n "${FSX_SEED_BASE:-}" ]; then
	base=$FSX_SEED_BASE
	from="FSX_SEED_BASE"
elif head=$(git -C "$here" rev-parse HEAD 2>/dev/null); then
	base=$((16#${head:0:8}))
	from="commit ${head:0:12}"
else
	base=$(date -u +%Y%m%d)
	from="date $(date -u +%F)"
fi

mnt=""
img=""
work=""
cleanup() {
	if [ -n "$mnt" ]; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		rmdir "$mnt" 2>/dev/null
	fi
	[ -n "$img" ] && rm -f "$img"
	[ -n "$work" ] && rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

skip_why=""
# mount_image TYPE: a fresh TYPE filesystem on a loop device over /dev/shm
# at $mnt, or return 1 with the reason in $skip_why.
mount_image() {
	local type=$1 mkfs

	cleanup
	mnt=""
	img=""
	work=""
	if [ "$(id -u)" -ne 0 ]; then
		skip_why="not root: cannot mount a loop image"
		return 1
	fi
	if [ ! -e /dev/loop-control ] && [ ! -e /dev/loop0 ]; then
		skip_why="no loop devices"
		return 1
	fi
	case $type in
	xfs) mkfs=(mkfs.xfs -f -q) ;;
	ext4) mkfs=(mkfs.ext4 -q -F) ;;
	esac
	if ! command -v "${mkfs[0]}" >/dev/null 2>&1; then
		skip_why="${mkfs[0]} missing (scripts/deps.sh installs it)"
		return 1
	fi
	if [ ! -d /dev/shm ] || ! img=$(mktemp /dev/shm/wtio-fsx-$type.XXXXXX); then
		img=""
		skip_why="no writable /dev/shm for the image"
		return 1
	fi
	# Sparse; XFS wants room for its log.
	truncate -s 1G "$img"
	if ! "${mkfs[@]}" "$img" >/dev/null 2>&1; then
		skip_why="${mkfs[0]} failed on $img"
		return 1
	fi
	mnt=$(mktemp -d /tmp/wtio-fsx-$type.XXXXXX)
	if ! mount -t "$type" -o loop "$img" "$mnt" 2>/dev/null; then
		rmdir "$mnt"
		mnt=""
		skip_why="cannot mount a $type loop image here"
		return 1
	fi
	return 0
}

runs=0
no_atomic=0
ops=0
fails=0
seeds=()
configs=()

# run_fsx FS DIR SEED OPTIONS...: one wtio-fsx run; FS names the
# filesystem for the report.
run_fsx() {
	local fs=$1 dir=$2 seed=$3 out rc n
	shift 3
	local cmd=("$fsx" -q -S "$seed" "$@" "$dir/fsx.$seed")

	out=$(timeout -k 10 "$tmo" "${cmd[@]}" 2>&1)
	rc=$?
	runs=$((runs + 1))
	seeds+=("$seed")
	n=$(printf '%s\n' "$out" | sed -n 's/.*: \([0-9]*\) ops OK.*/\1/p' | tail -1)
	ops=$((ops + ${n:-0}))
	if [ $rc -eq 0 ] && [[ " $* " == *" --adaptive"* ]] &&
	   ! printf '%s\n' "$out" | tail -1 |
		grep -q 'adaptive-writethrough [1-9]'; then
		printf '%s\n' "$out" | tail -1
		# Whether a seed's writes ever reach the throttle depends
		# on the seed: the caller tries a few more before failing.
		if [ "${adaptive_tries_left:-0}" -gt 0 ]; then
			echo "  (seed $seed: no write reached the dirty limit; trying another seed)"
			return 2
		fi
		echo "FAIL: no adaptive write went write-through ($fs): the mode was not exercised"
		echo "  reproduce (on $fs): ${cmd[*]}"
		fails=$((fails + 1))
		return 1
	fi
	if [ $rc -eq 0 ] && [[ " $* " == *" --tight="* ]] &&
	   ! printf '%s\n' "$out" | tail -1 |
		grep -q 'tight: refused [1-9][0-9]* cut [1-9]'; then
		printf '%s\n' "$out" | tail -1
		echo "FAIL: no write was refused or none cut short ($fs): the full filesystem was not exercised"
		echo "  reproduce (on $fs): ${cmd[*]}"
		fails=$((fails + 1))
		return 1
	fi
	if [ $rc -eq 0 ]; then
		printf '%s\n' "$out" | tail -1
		# On XFS atomic writes are part of the test: a run that was
		# meant to do them and did none skipped that part.
		case "$fs $*" in
		xfs*"-X atomic"*) ;;
		# operations shorter than the smallest atomic unit: none can
		# be untorn (the tool leaves them out; it once overran its
		# buffer here)
		xfs*"-o 3000 "*) ;;
		xfs*)
			if printf '%s\n' "$out" | tail -1 | grep -q ' atomic 0 '; then
				no_atomic=1
			fi
			;;
		esac
		return 0
	fi
	fails=$((fails + 1))
	printf '%s\n' "$out" | tail -60
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		echo "FAIL: hang: no end in $tmo s ($fs)"
	else
		echo "FAIL: exit $rc ($fs)"
	fi
	echo "  reproduce (on $fs): ${cmd[*]}"
	echo "  rerun this part:  FSX_SEED_BASE=$base bash $here/fsx.sh $fsx $part"
	rm -f "$dir/fsx.$seed"
	return 1
}

# Each configuration: "options" (folio, cache, backend, sizes, atomic).
case $part in
local)
	cfgs=(
		"-f 4k -c 64k -l 512k -o 128k -N 3000 -b io_uring"
		"-f 4k -c 64k -l 512k -o 128k -N 3000 -b psync"
		"-f 64k -c 1m -l 2m -o 256k -N 1500 -b io_uring"
		"-f 1m -c 16m -l 8m -o 2m -N 300 -b psync"
		"--posix -l 512k -o 128k -N 3000"
	)
	;;
xfs)
	cfgs=(
		"-f 4k -c 64k -l 512k -o 128k -N 3000 -b io_uring"
		"-f 4k -c 1m -l 1m -o 256k -N 3000 -b psync -X atomic"
		"-f 4k -c 64k -l 256k -o 64k -N 3000 -b psync"
		"-f 64k -c 1m -l 2m -o 256k -N 1500 -b psync"
		"-f 64k -c 4m -l 4m -o 512k -N 1500 -b io_uring -X atomic"
		"-f 1m -c 16m -l 8m -o 2m -N 300 -b io_uring"
		"-f 4k -c 64k -l 8191 -o 3000 -N 1500 -b io_uring"
	)
	;;
ext4)
	cfgs=(
		"-f 4k -c 64k -l 512k -o 128k -N 3000 -b psync"
		"-f 4k -c 256k -l 1m -o 64k -N 3000 -b io_uring"
		"-f 64k -c 1m -l 2m -o 256k -N 1500 -b io_uring"
		"-f 1m -c 16m -l 8m -o 2m -N 300 -b psync"
	)
	;;
adaptive)
	cfgs=(
		"--adaptive -f 4k -c 64k -l 512k -o 128k -N 3000 -b io_uring"
		"--adaptive=ctx -f 4k -c 128k -l 1m -o 64k -N 3000 -b psync"
		"--adaptive -f 64k -c 1m -l 2m -o 256k -N 1500 -b psync"
	)
	;;
tight|tight_ext4)
	cfgs=(
		"--tight=512k -f 4k -c 128k -l 1m -o 128k -N 3000 -b io_uring"
		"--tight=1m -f 16k -c 512k -l 2m -o 300k -N 2000 -b psync"
		"--tight=1m -f 64k -c 2m -l 2m -o 300k -N 2000 -b io_uring"
		"--tight=1m -f 512k -c 16m -l 2m -o 300k -N 2000 -b io_uring"
		"--tight=2m -f 1m -c 32m -l 4m -o 600k -N 1500 -b psync"
	)
	;;
large)
	# WTIO_CONFIG_LARGE_FOLIOS: the file's folio size changes whenever
	# its cache is empty (reopen, truncate, eviction, drop-behind).
	cfgs=(
		"--large-folios -f 4k -c 4m -l 4m -o 300k -N 3000 -b io_uring"
		"--large-folios -f 4k -c 4m -l 2m -o 128k -N 3000 -b psync"
		"--large-folios -f 16k -c 16m -l 8m -o 1m -N 1500 -b io_uring"
		"--large-folios -f 4k -c 8m -l 8m -o 1m -N 1500 -b psync"
		"--large-folios --keep-closed -f 4k -c 4m -l 4m -o 300k -N 2000 -b io_uring"
		"--large-folios --tight=1m -f 4k -c 4m -l 2m -o 300k -N 2000 -b psync"
	)
	;;
keep)
	cfgs=(
		"--keep-closed -f 4k -c 64k -l 512k -o 128k -N 3000 -b io_uring"
		"--keep-closed -f 4k -c 1m -l 256k -o 64k -N 3000 -b psync"
		"--keep-closed -f 64k -c 1m -l 2m -o 256k -N 1500 -b io_uring"
	)
	;;
seeds) ;;
*)
	echo "usage: fsx.sh WTIO_FSX [local|xfs|ext4|seeds|adaptive|keep|tight|tight_ext4|large]" >&2
	exit 2
	;;
esac

echo "fsx.sh $part: seeds from $from (base $base)"
skipped=""
if [ "$part" = seeds ]; then
	# "FS -S SEED OPTIONS  # why": FS is local, xfs or ext4.
	while read -r -u 3 fs rest; do
		case $fs in ''|'#'*) continue ;; esac
		opts=${rest%%#*}
		# shellcheck disable=SC2086
		set -- $opts
		[ "$1" = -S ] || { echo "fsx_seeds: no -S in: $fs $rest"; exit 1; }
		seed=$2
		shift 2
		if [ "$fs" = local ]; then
			work=$(mktemp -d "$PWD/fsx.XXXXXX")
			dir=$work
		elif mount_image "$fs"; then
			dir=$mnt
		else
			echo "skipped entry ($fs: $skip_why): $fs $opts"
			skipped="$skip_why"
			continue
		fi
		configs+=("$fs $*")
		run_fsx "$fs" "$dir" "$seed" "$@"
		cleanup
		mnt=""
		img=""
		work=""
	done 3< "$here/fsx_seeds"
else
	if [ "$part" = local ] || [ "$part" = adaptive ] ||
	   [ "$part" = keep ]; then
		work=$(mktemp -d "$PWD/fsx.XXXXXX")
		dir=$work
		fsname="local ($(stat -f -c %T "$dir" 2>/dev/null || echo '?'))"
	elif case $part in tight|large) itype=xfs ;; tight_ext4) itype=ext4 ;;
	     *) itype=$part ;; esac; mount_image "$itype"; then
		dir=$mnt
		fsname="$itype loop image"
	else
		echo "SKIP: fsx on $part: $skip_why"
		exit 77
	fi
	k=0
	for c in "${cfgs[@]}"; do
		k=$((k + 1))
		# Distinct per part and configuration; never 0 (0 = clock).
		off=0
		case $part in xfs) off=1000 ;; ext4) off=2000 ;; adaptive) off=3000 ;; keep) off=4000 ;; tight) off=5000 ;; tight_ext4) off=6000 ;; esac
		seed=$(( (base + (off + k) * 1000003) % 4294967291 + 1 ))
		configs+=("$c")
		# An adaptive run whose seed never reached the dirty limit
		# passed as fsx but did not exercise the mode: up to three
		# more seeds, then it fails.
		adaptive_tries_left=0
		[ "$part" = adaptive ] && adaptive_tries_left=3
		while :; do
			# shellcheck disable=SC2086
			run_fsx "$fsname" "$dir" "$seed" $c
			[ $? -eq 2 ] || break
			adaptive_tries_left=$((adaptive_tries_left - 1))
			seed=$(( seed % 4294967291 + 7919 ))
		done
	done
fi

echo "fsx.sh $part: covered $runs runs, $ops operations, seeds ${seeds[*]:-none}," \
	"${#configs[@]} configurations:"
for c in "${configs[@]}"; do
	echo "  $c"
done
if [ $fails -ne 0 ]; then
	echo "fsx.sh $part: $fails of $runs runs FAILED (reproduce commands above)"
	exit 1
fi
if [ $no_atomic -ne 0 ]; then
	echo "SKIP: the XFS image gives no atomic writes (RWF_ATOMIC): that part not run (everything else passed)"
	exit 77
fi
if [ -n "$skipped" ]; then
	echo "SKIP: part of fsx_seeds not run: $skipped (everything else passed)"
	exit 77
fi
echo "fsx.sh $part: PASS"
