#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lseek at and past the filesystem's largest file size, and past the
# largest off_t, on served files: the kernel refuses a position past
# s_maxbytes (ext4: 16 TiB - 4 KiB) with EINVAL, and a sum past off_t too.
# tests/shared_seek_limit.c prints each call's result, errno and the
# position after it; its lines bare, under the per-process shim and under
# --shared (the holder's answer and the shared page's local one) must be
# the same, on the directory of the tests and on a tmpfs one (whose limit
# is the largest off_t) when tmpfs takes O_DIRECT.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
PROG=$SHIM_BIN/shared_seek_limit
[ -x "$PROG" ] || skip "shared_seek_limit not built"
SHM_DIR=
trap 'rm -rf "$SHIM_TMP" ${SHM_DIR:+"$SHM_DIR"}' EXIT

# one DIR LABEL: bare against each shim, in DIR
one() {
	local dir=$1 label=$2 how n
	rm -rf "${dir:?}"/*
	"$PROG" "$dir" >"$SHIM_TMP/bare" 2>&1 ||
		fail "$label: bare run failed: $(tail -3 "$SHIM_TMP/bare")"
	grep -q '^done$' "$SHIM_TMP/bare" || fail "$label: bare run incomplete"
	for how in per-process shared-writeback shared-writethrough; do
		rm -rf "${dir:?}"/*
		case $how in
		per-process)
			"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode=writeback \
				--paths="$dir" --cache-size=64M --debug -- \
				"$PROG" "$dir" >"$SHIM_TMP/out" 2>"$SHIM_TMP/log"
			;;
		*)
			rm -f "$STATS" "$STATS.log"
			WTIO_HOLDER_STATS=$STATS "$WTIO_RUN" --shared \
				--log="$STATS.log" --preload="$WTIO_PRELOAD" \
				--mode="${how#shared-}" --paths="$dir" \
				--cache-size=64M -- "$PROG" "$dir" \
				>"$SHIM_TMP/out" 2>"$SHIM_TMP/log"
			;;
		esac
		rc=$?
		[ "$rc" = 0 ] || fail "$label, $how: exit $rc: $(tail -3 "$SHIM_TMP/out") $(grep -v '^wtio-preload\[' "$SHIM_TMP/log" | tail -3)"
		diff "$SHIM_TMP/bare" "$SHIM_TMP/out" >"$SHIM_TMP/diff" ||
			fail "$label, $how: lseek differs from the kernel's (< bare, > shim): $(head -8 "$SHIM_TMP/diff")"
		if [ "$how" = per-process ]; then
			n=$(grep -c "served by wtio" "$SHIM_TMP/log")
		else
			wait_holder "$STATS"
			n=$(stat_of "$STATS" opens_served)
		fi
		[ "${n:-0}" -ge 2 ] ||
			fail "$label, $how: ${n:-0} of the 2 files served: nothing was checked"
		echo "ok: $label, $how: $(wc -l <"$SHIM_TMP/bare") lines as the kernel's"
	done
}

one "$SERVED" "$(stat -f -c %T "$SERVED")"
if SHM_DIR=$(mktemp -d /dev/shm/wtio-seek-limit.XXXXXX 2>/dev/null) &&
   dd if=/dev/zero of="$SHM_DIR/.odirect" bs=4096 count=1 oflag=direct \
	status=none 2>/dev/null; then
	rm -f "$SHM_DIR/.odirect"
	one "$SHM_DIR" tmpfs
else
	echo "note: no tmpfs with O_DIRECT in /dev/shm: only $(stat -f -c %T "$SERVED") checked"
fi
echo "PASS: shim-shared-seek-limit"
