#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# size-race: test_size_race on a fresh XFS image (loop over /dev/shm), in
# the configuration that lost bytes before the disk-size bound was fixed
# (6 owners writing DSYNC write-back, the tail writing through with DSYNC,
# io_uring; failed 8 of 8 runs) and in random modes. Exit 0/1/77.
set -u
T=${1:?usage: size-race.sh test_size_race}
T=$(readlink -f "$T")
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for a loop-mounted XFS"; exit 77; }
command -v mkfs.xfs >/dev/null || { echo "SKIP: mkfs.xfs missing (xfsprogs)"; exit 77; }
img=$(mktemp /dev/shm/wtio-size-race.XXXXXX) || exit 1
mnt=$(mktemp -d /tmp/wtio-size-race.XXXXXX) || exit 1
cleanup() { umount "$mnt" 2>/dev/null; rmdir "$mnt"; rm -f "$img"; }
trap cleanup EXIT
truncate -s 1G "$img" && mkfs.xfs -q -f "$img" || { echo "FAIL: mkfs.xfs"; exit 1; }
if ! mount -o loop "$img" "$mnt" 2>/dev/null; then
	echo "SKIP: cannot loop-mount an XFS image here"; exit 77
fi
fail=0
for i in 1 2 3; do
	NWR=6 NSY=0 TMODE=3 WMODE=2 timeout 60 "$T" "$mnt/f$i" 4096 3 1 || { echo "FAIL: targeted run $i"; fail=1; }
done
for i in 1 2; do
	timeout 60 "$T" "$mnt/r$i" 4096 3 1 || { echo "FAIL: random-mode run $i"; fail=1; }
done
[ $fail = 0 ] && echo PASS
exit $fail
