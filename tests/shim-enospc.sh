#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cp --reflink=never of a file larger than the free space of an XFS,
# under wtio-run in each mode: cp must fail with "No space left on device"
# when it writes, never with a read error on the source (the defect: the
# write-back of accepted data failed with ENOSPC, the failed folios filled
# the cache and the next read of the source got EIO), and what cp wrote
# is the source's beginning. The XFS is a 128 MiB image on a loop device
# over /dev/shm, filled to a few MiB free.
. "$(dirname "$0")/shim-lib.sh"

[ "$(id -u)" = 0 ] || skip "not root: cannot mount a loop device"
for c in mkfs.xfs mount umount losetup fallocate; do
	command -v $c >/dev/null 2>&1 || skip "$c missing"
done
[ -e /dev/loop-control ] || skip "no loop devices"
IMGDIR=$(mktemp -d /dev/shm/wtio-shim-enospc.XXXXXX) || skip "no /dev/shm"
XFS=$SHIM_TMP/xfs
mkdir -p "$XFS"
cleanup() {
	mountpoint -q "$XFS" && { umount "$XFS" || umount -l "$XFS"; }
	rm -rf "$IMGDIR" "$SHIM_TMP"
}
trap cleanup EXIT
truncate -s 128M "$IMGDIR/xfs.img" || fail "image"
# mkfs.xfs refuses under 300 MiB unless it believes it runs under fstests
TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1 mkfs.xfs -f -q "$IMGDIR/xfs.img" ||
	skip "mkfs.xfs refuses a 128 MiB image"
mount -t xfs -o loop "$IMGDIR/xfs.img" "$XFS" || skip "cannot mount an XFS image here"

avail() { df -B1 --output=avail "$XFS" | tail -1; }
# the source: 48 MiB, served too (reads go through the cache), not on XFS
src=$SERVED/src.bin
head -c 48M /dev/urandom >"$src" || fail "make source"

for mode in $MODES writeback+dsync; do
	case $mode in
	*+dsync) opts="${mode%+dsync} --dsync" ;;
	*) opts=$mode ;;
	esac
	rm -f "$XFS/dst.bin" "$XFS/filler"
	sync
	sleep 0.2
	free=$(avail)
	fallocate -l $((free - 16 * 1024 * 1024)) "$XFS/filler" || fail "fill ($mode)"
	sync
	free=$(avail)
	# shellcheck disable=SC2086
	run $opts --paths="$SERVED:$XFS" --cache-size=8M -- cp --reflink=never "$src" "$XFS/dst.bin" 2>"$SHIM_TMP/err"
	rc=$?
	err=$(cat "$SHIM_TMP/err")
	[ $rc != 0 ] || fail "cp of 48 MiB into $free free bytes succeeded ($mode)"
	grep -q "error writing.*No space left on device" <<<"$err" ||
		fail "cp did not fail at write time with ENOSPC ($mode): $err"
	grep -q "error reading" <<<"$err" && fail "read error on the source ($mode): $err"
	grep -q "Input/output error" <<<"$err" && fail "EIO ($mode): $err"
	# Nothing it acknowledged failed later, and a write-through write's
	# refusal is not reported again by close (the kernel's is not).
	grep -q "failed to close" <<<"$err" && fail "close failed ($mode): $err"
	size=$(stat -c %s "$XFS/dst.bin")
	[ "$size" -gt $((free / 2)) ] || fail "only $size of $free free bytes taken ($mode)"
	cmp -n "$size" "$src" "$XFS/dst.bin" || fail "dst is not the source's beginning ($mode)"
	echo "ok: $mode: cp stopped with ENOSPC at write after $size of $free free bytes, no read error"
done
exit 0
