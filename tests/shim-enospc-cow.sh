# SPDX-License-Identifier: MIT
# A clone made through the shim, then overwrites of its SOURCE, on a
# nearly full XFS with reflink: the source's blocks are shared after the
# clone, so each overwrite needs new copy-on-write blocks. One program
# (python3, under wtio-run) writes a 16 MiB file (its cache is set up
# then), clones it (FICLONE), fills the filesystem to 2 MiB free and
# overwrites the source in 1 MiB writes: a write must fail with ENOSPC,
# fsync and close must then succeed, and every acknowledged write must be
# on disk after a remount. Without the shim reopening the source's cache
# at the clone (preload/ioctl.c clone_source), the library kept what it
# had seen before the clone (nothing shared): every write was accepted
# and fsync failed with ENOSPC, the data lost.
. "$(dirname "$0")/shim-lib.sh"

[ "$(id -u)" = 0 ] || skip "not root: cannot mount a loop device"
for c in mkfs.xfs mount umount python3; do
	command -v $c >/dev/null 2>&1 || skip "$c missing"
done
[ -e /dev/loop-control ] || skip "no loop devices"
IMGDIR=$(mktemp -d /dev/shm/wtio-shim-cow.XXXXXX) || skip "no /dev/shm"
XFS=$SHIM_TMP/xfs
mkdir -p "$XFS"
cleanup() {
	mountpoint -q "$XFS" && { umount "$XFS" || umount -l "$XFS"; }
	rm -rf "$IMGDIR" "$SHIM_TMP"
}
trap cleanup EXIT
truncate -s 128M "$IMGDIR/xfs.img" || fail "image"
TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1 mkfs.xfs -f -q -m reflink=1 "$IMGDIR/xfs.img" ||
	skip "mkfs.xfs -m reflink=1 refuses a 128 MiB image"
mount -t xfs -o loop "$IMGDIR/xfs.img" "$XFS" || skip "cannot mount an XFS image here"

cat >"$SHIM_TMP/cow.py" <<'PY'
import errno, fcntl, os, sys
d, fill = sys.argv[1], sys.argv[2]
FICLONE = 0x40049409
s = os.open(d + "/src", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
for k in range(16):
    os.write(s, bytes([1 + k]) * (1 << 20))
os.fsync(s)
t = os.open(d + "/dst", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
fcntl.ioctl(t, FICLONE, s)
os.close(t)
os.sync()
st = os.statvfs(d)
f = os.open(fill, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
os.posix_fallocate(f, 0, st.f_bavail * st.f_frsize - (2 << 20))
os.fsync(f)
os.close(f)
acked = []
for k in range(16):
    try:
        n = os.pwrite(s, bytes([0x80 + k]) * (1 << 20), k << 20)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        n = 0
    acked.append(n)
try:
    os.fsync(s)
    os.close(s)
except OSError as e:
    print("FAIL: fsync/close after the overwrites: %s" % e)
    sys.exit(1)
print(" ".join(str(n) for n in acked))
PY

for mode in writeback dontcache writeback+dsync; do
	case $mode in
	*+dsync) opts="${mode%+dsync} --dsync" ;;
	*) opts=$mode ;;
	esac
	rm -rf "$XFS/s" "$XFS/filler"
	mkdir "$XFS/s"
	sync
	sleep 0.2
	# shellcheck disable=SC2086
	out=$(run $opts --debug --paths="$XFS/s" --cache-size=8M -- python3 "$SHIM_TMP/cow.py" "$XFS/s" "$XFS/filler" 2>"$SHIM_TMP/err")
	rc=$?
	[ $rc = 0 ] || fail "$mode: rc $rc: $out $(tail -5 "$SHIM_TMP/err")"
	# the kernel alone passes this test: the source must be wtio's
	grep -q "src.*served by wtio\|served by wtio.*src" "$SHIM_TMP/err" ||
		fail "$mode: the source was not served: $(grep src "$SHIM_TMP/err" | head -3)"
	read -r -a acked <<<"$(tail -1 <<<"$out")"
	[ ${#acked[@]} = 16 ] || fail "$mode: $out"
	umount "$XFS" && mount -t xfs -o loop "$IMGDIR/xfs.img" "$XFS" || fail "remount"
	total=0 refused=0
	for k in $(seq 0 15); do
		n=${acked[$k]}
		total=$((total + n))
		[ "$n" = 0 ] && refused=$((refused + 1))
		want=$(printf '%02x' $((0x80 + k)))
		old=$(printf '%02x' $((1 + k)))
		got=$(od -An -tx1 -v -j $((k << 20)) -N $((1 << 20)) "$XFS/s/src" | tr -s ' \n' '\n\n' | grep -v '^$' | uniq -c | awk '{print $1 ":" $2}' | tr '\n' ' ')
		exp=""
		[ "$n" -gt 0 ] && exp="$n:$want "
		[ "$n" -lt $((1 << 20)) ] && exp="$exp$(((1 << 20) - n)):$old "
		[ "$got" = "$exp" ] || fail "$mode: MiB $k of src after remount: $got (want $exp)"
	done
	[ $refused -gt 0 ] || fail "$mode: every overwrite of the clone's source accepted with 2 MiB free"
	cmp -s "$XFS/s/dst" <(for k in $(seq 1 16); do head -c 1048576 /dev/zero | tr '\0' "\\$(printf '%03o' $k)"; done) ||
		fail "$mode: the clone changed"
	echo "ok: $mode: $total bytes of overwrite acknowledged, $refused writes refused with ENOSPC, fsync 0, on disk after remount"
done
exit 0
