# SPDX-License-Identifier: MIT
# Sourced by tests/shim-syscall.sh and tests/shim-ioctl*.sh: an XFS image
# with reflink (mkfs.xfs -m reflink=1) on a loop device over /dev/shm,
# mounted in a private mount namespace (so that no mount outlives the
# test), then tests/shim-lib.sh with its served directory on it.
# Exit 77 with a reason where that cannot be done here.
case "${B_SANITIZE:-none}" in
none|"") ;;
*) . "$(dirname "$0")/shim-lib.sh" ;;	# skips, with its reason
esac
if [ -z "${SHIM_XFS_NS:-}" ]; then
	[ "$(id -u)" = 0 ] || { echo "SKIP: not root: cannot mount an XFS image"; exit 77; }
	command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) missing"; exit 77; }
	SHIM_XFS_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
for c in mkfs.xfs mount umount; do
	command -v $c >/dev/null || { echo "SKIP: $c missing (xfsprogs, util-linux)"; exit 77; }
done
XFS_DIR=$(mktemp -d /dev/shm/wtio-shimxfs.XXXXXX) || { echo "FAIL: mktemp"; exit 1; }
xfs_cleanup() {
	umount "$XFS_DIR/mnt" 2>/dev/null || umount -l "$XFS_DIR/mnt" 2>/dev/null
	rm -rf "$XFS_DIR"
}
trap xfs_cleanup EXIT
truncate -s 1G "$XFS_DIR/img" && mkdir "$XFS_DIR/mnt" || { echo "FAIL: image"; exit 1; }
if ! mkfs.xfs -f -q -m reflink=1 "$XFS_DIR/img" >/dev/null 2>&1; then
	echo "SKIP: mkfs.xfs -m reflink=1 failed (xfsprogs too old?)"
	exit 77
fi
if ! mount -t xfs -o loop "$XFS_DIR/img" "$XFS_DIR/mnt"; then
	echo "SKIP: cannot mount an XFS image on a loop device here"
	exit 77
fi
export SHIM_TMPDIR=$XFS_DIR/mnt
. "$(dirname "$0")/shim-lib.sh"
trap 'rm -rf "$SHIM_TMP"; xfs_cleanup' EXIT

# shim_raw_group MODE GROUP: run tests/shim/shim_raw.c's GROUP of cases
# under the shim in MODE on the served XFS; fails unless the shim served
# the files (and, outside the uring groups, no ring made it pass them
# through); a part that could not run sets skipped=1.
shim_raw_group() {
	local mode=$1 grp=$2 out rc
	rm -rf "${SERVED:?}"/*
	# shellcheck disable=SC2086
	out=$(run "$mode" --debug -- "$SHIM_BIN/shim_raw" "$SERVED" $grp 2>&1)
	rc=$?
	grep -v '^wtio-preload\[' <<<"$out" | sed "s/^/[$mode] /"
	# the checks mean something only on files the shim served
	grep -q "served by wtio" <<<"$out" || fail "shim_raw $grp ($mode): nothing was served"
	case $grp in
	uring-*) ;;
	*) ! grep -q "uses io_uring" <<<"$out" ||
		fail "shim_raw $grp ($mode): everything passed through (a ring was seen)" ;;
	esac
	case $rc in
	0) ;;
	77) skipped=1 ;;
	*) fail "shim_raw $grp ($mode): exit $rc" ;;
	esac
}
