#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A sequential copy under wtio-run is made in large I/Os in every mode:
# dd bs=1M and cp (128 KiB calls) of a 48 MiB file, counted by the
# line the shim appends to WTIO_STATS=FILE at exit. The source is read in about one I/O per MiB
# (readahead grows to max_io_size I/Os) and read once; dd's 1 MiB writes
# are one I/O each, and write-back writes cp's stream in I/Os of about a
# MiB (write-through and DONTCACHE write each write() as it returns: one
# I/O per call). A DONTCACHE copy drops what it read and wrote, and
# evicts nothing. The copies are compared byte for byte, their sizes exact.
. "$(dirname "$0")/shim-lib.sh"

mib=48
size=$((mib << 20))
head -c "$size" /dev/urandom >"$SERVED/src" || fail "make source"

# counter NAME FILE: the value of NAME in the stats line of FILE
counter() {
	sed -n 's/.*wtio-preload\[[0-9]*\]: stats //p' "$2" | tail -1 |
		awk -v k="$1" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }'
}

# check LABEL MODE OUT MAX_READ_IOS MAX_WRITE_IOS
check() {
	local label=$1 mode=$2 out=$3 rmax=$4 wmax=$5 r rb w wb
	cmp "$SERVED/src" "$SERVED/dst" || fail "$label ($mode): copy differs"
	[ "$(stat -c %s "$SERVED/dst")" = "$size" ] ||
		fail "$label ($mode): size $(stat -c %s "$SERVED/dst"), not $size"
	r=$(counter read_ios "$out")
	rb=$(counter bytes_read "$out")
	w=$(counter write_ios "$out")
	wb=$(counter bytes_written "$out")
	[ -n "$r" ] && [ -n "$w" ] || fail "$label ($mode): no stats line in $out"
	echo "  $label $mode: read_ios $r ($rb bytes), write_ios $w ($wb bytes)"
	[ "$r" -le "$rmax" ] || fail "$label ($mode): $r read I/Os for $mib MiB (at most $rmax)"
	[ "$w" -le "$wmax" ] || fail "$label ($mode): $w write I/Os for $mib MiB (at most $wmax)"
	# read once: no more than the file and one readahead window past it
	[ "$rb" -le $((size + (4 << 20))) ] || fail "$label ($mode): read $rb bytes of a $size-byte file"
	[ "$wb" -ge "$size" ] && [ "$wb" -le $((size + (1 << 20))) ] ||
		fail "$label ($mode): wrote $wb bytes of a $size-byte file"
	if [ "$mode" = dontcache ]; then
		[ "$(counter evictions "$out")" = 0 ] ||
			fail "$label ($mode): evicted $(counter evictions "$out") folios"
		# every folio read and every folio written dropped, but for
		# what readahead brought past the last read (one window)
		[ "$(counter dropbehind "$out")" -ge $(((2 * size - (2 << 20)) / 4096)) ] ||
			fail "$label ($mode): $(counter dropbehind "$out") folios dropped behind"
	fi
}

# About one read I/O a MiB, a few more where the window ramps up.
rmax=$((mib + mib / 4 + 8))
for mode in $MODES; do
	rm -f "$SERVED/dst"
	rm -f "$SHIM_TMP/dd.st" "$SHIM_TMP/cp.st"
	WTIO_STATS=$SHIM_TMP/dd.st run "$mode" -- dd if="$SERVED/src" \
		of="$SERVED/dst" bs=1M status=none || fail "dd ($mode)"
	check dd "$mode" "$SHIM_TMP/dd.st" "$rmax" $((mib + mib / 4 + 8))
	rm -f "$SERVED/dst"
	WTIO_STATS=$SHIM_TMP/cp.st run "$mode" -- cp --reflink=never \
		"$SERVED/src" "$SERVED/dst" || fail "cp ($mode)"
	case $mode in
	# write-back's flushers and a DONTCACHE stream: I/Os of a MiB
	writeback|dontcache) wmax=$((mib + mib / 4 + 8)) ;;
	*) wmax=$((mib * 8 + 8)) ;;	# one I/O per 128 KiB write()
	esac
	check cp "$mode" "$SHIM_TMP/cp.st" "$rmax" "$wmax"
done
echo "ok: streams in large I/Os in every mode"

# WTIO_STATS=1 and =stderr: the line goes to the stderr the process
# started with, even from cp, which closes its stderr before the exit
# handlers run; no file named "1" or "stderr" is made. WTIO_STATS=0: no
# line, no file "0". (Run in a directory of their own, the one a file of
# that name would land in.)
mkdir -p "$SHIM_TMP/cwd"
for v in 1 stderr 0; do
	rm -f "$SERVED/dst" "$SHIM_TMP/cwd"/*
	(cd "$SHIM_TMP/cwd" && WTIO_STATS=$v run writeback -- cp \
		--reflink=never "$SERVED/src" "$SERVED/dst" 2>"$SHIM_TMP/err") ||
		fail "cp, WTIO_STATS=$v: $(tail -3 "$SHIM_TMP/err")"
	cmp "$SERVED/src" "$SERVED/dst" || fail "cp, WTIO_STATS=$v: copy differs"
	[ -z "$(ls -A "$SHIM_TMP/cwd")" ] ||
		fail "WTIO_STATS=$v made a file: $(ls -A "$SHIM_TMP/cwd")"
	n=$(grep -c 'wtio-preload\[[0-9]*\]: stats ' "$SHIM_TMP/err")
	if [ "$v" = 0 ]; then
		[ "$n" = 0 ] || fail "WTIO_STATS=0: $n stats lines on stderr"
	else
		[ "$n" = 1 ] || fail "WTIO_STATS=$v: $n stats lines on stderr, not 1: $(head -3 "$SHIM_TMP/err")"
		[ "$(counter read_ios "$SHIM_TMP/err")" -gt 0 ] ||
			fail "WTIO_STATS=$v: no read I/O counted"
	fi
done
echo "ok: WTIO_STATS=1 and =stderr write to stderr, =0 nothing, no file made"
exit 0
