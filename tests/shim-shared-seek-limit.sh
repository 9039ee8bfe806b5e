#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lseek at and past the largest file size, and past the largest off_t, on
# served files, then writes, ftruncate and fallocate at that limit: the
# kernel refuses a position past s_maxbytes (ext4: 16 TiB - 4 KiB) with
# EINVAL, a write at it with EFBIG, cuts one across it short, and
# ftruncate or fallocate past it is EFBIG; a sum past off_t is EINVAL.
# Under wtio the limit is wtio's (at most 2^62, wtio_file_max_size), the
# same for every call. tests/shared_seek_limit.c prints each call's
# result, errno and the position after it; its lines bare (the kernel,
# with wtio's limit laid over its own, as the kernel lays s_maxbytes),
# under the per-process shim and under --shared (the holder's answer and
# the shared page's local one) must be the same, on the directory of the
# tests and on a tmpfs one (whose own limit is the largest off_t, past
# 2^62) when tmpfs takes O_DIRECT. wtio's limit is read from the
# per-process shim's --debug line; on tmpfs it must be 2^62 exactly.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
PROG=$SHIM_BIN/shared_seek_limit
[ -x "$PROG" ] || skip "shared_seek_limit not built"
SHM_DIR=
trap 'rm -rf "$SHIM_TMP" ${SHM_DIR:+"$SHM_DIR"}' EXIT

# one DIR LABEL [WANT]: bare against each shim, in DIR; WANT: the limit
# wtio must find there
one() {
	local dir=$1 label=$2 want=${3:-} how n lim
	for how in per-process shared-writeback shared-writethrough; do
		rm -rf "${dir:?}"/*
		case $how in
		per-process)
			"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode=writeback \
				--paths="$dir" --cache-size=64M --debug -- \
				"$PROG" "$dir" "${lim:-1}" >"$SHIM_TMP/out" 2>"$SHIM_TMP/log"
			;;
		*)
			rm -f "$STATS" "$STATS.log"
			WTIO_HOLDER_STATS=$STATS "$WTIO_RUN" --shared \
				--log="$STATS.log" --preload="$WTIO_PRELOAD" \
				--mode="${how#shared-}" --paths="$dir" \
				--cache-size=64M -- "$PROG" "$dir" "$lim" \
				>"$SHIM_TMP/out" 2>"$SHIM_TMP/log"
			;;
		esac
		rc=$?
		[ "$rc" = 0 ] || fail "$label, $how: exit $rc: $(tail -3 "$SHIM_TMP/out") $(grep -v '^wtio-preload\[' "$SHIM_TMP/log" | tail -3)"
		if [ "$how" = per-process ] && [ -z "${lim:-}" ]; then
			# wtio's limit for a (and the others: one file system)
			lim=$(sed -n 's,.*/a served by wtio (.*largest size \([0-9]*\)).*,\1,p' \
				"$SHIM_TMP/log" | head -1)
			[ -n "$lim" ] && [ "$lim" -gt 0 ] &&
				[ "$lim" -le $((1 << 62)) ] ||
				fail "$label: no limit, or one past 2^62, in the --debug log: '$lim'"
			[ -z "$want" ] || [ "$lim" = "$want" ] ||
				fail "$label: wtio's limit $lim, not $want"
			rm -rf "${dir:?}"/*
			"$PROG" "$dir" "$lim" bare >"$SHIM_TMP/bare" 2>&1 ||
				fail "$label: bare run failed: $(tail -3 "$SHIM_TMP/bare")"
			grep -q '^done$' "$SHIM_TMP/bare" ||
				fail "$label: bare run incomplete"
			# again, with the limit known (its lines write at it)
			rm -rf "${dir:?}"/*
			"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode=writeback \
				--paths="$dir" --cache-size=64M --debug -- \
				"$PROG" "$dir" "$lim" >"$SHIM_TMP/out" 2>"$SHIM_TMP/log" ||
				fail "$label, $how: exit $?: $(tail -3 "$SHIM_TMP/out")"
		fi
		diff "$SHIM_TMP/bare" "$SHIM_TMP/out" >"$SHIM_TMP/diff" ||
			fail "$label, $how: differs from the kernel's with wtio's limit $lim (< bare, > shim): $(head -8 "$SHIM_TMP/diff")"
		if [ "$how" = per-process ]; then
			n=$(grep -c "served by wtio" "$SHIM_TMP/log")
		else
			wait_holder "$STATS"
			n=$(stat_of "$STATS" opens_served)
		fi
		[ "${n:-0}" -ge 3 ] ||
			fail "$label, $how: ${n:-0} of the 3 files served: nothing was checked"
		echo "ok: $label, $how: $(wc -l <"$SHIM_TMP/bare") lines as the kernel's at wtio's limit $lim"
	done
}

one "$SERVED" "$(stat -f -c %T "$SERVED")"
if SHM_DIR=$(mktemp -d /dev/shm/wtio-seek-limit.XXXXXX 2>/dev/null) &&
   dd if=/dev/zero of="$SHM_DIR/.odirect" bs=4096 count=1 oflag=direct \
	status=none 2>/dev/null; then
	rm -f "$SHM_DIR/.odirect"
	one "$SHM_DIR" tmpfs $((1 << 62))
else
	echo "note: no tmpfs with O_DIRECT in /dev/shm: only $(stat -f -c %T "$SERVED") checked"
fi
echo "PASS: shim-shared-seek-limit"
