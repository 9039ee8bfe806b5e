#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Times a program sets on a file it is writing survive the shim's
# write-back, as they survive the kernel's: tar x and gzip -k write a file
# and set its mtime with futimens() before close; wtio's write-back at
# close (a direct write, an ftruncate for the exact size) used to stamp
# the file with the time of the close. And a write after the futimens
# moves the mtime again, as on the kernel. Every mode.
. "$(dirname "$0")/shim-lib.sh"
command -v tar >/dev/null || skip "no tar"
command -v gzip >/dev/null || skip "no gzip"
command -v python3 >/dev/null || skip "no python3"

src=$SHIM_TMP/src
mkdir -p "$src"
echo small >"$src/a"
head -c 3145728 /dev/urandom >"$src/b"
touch -d 2001-01-01 "$src/a" "$src/b"
tar cf "$SHIM_TMP/x.tar" -C "$src" .
want=$(date -d 2001-01-01 +%s)

for mode in $MODES; do
	rm -rf "${SERVED:?}"/*
	(cd "$SERVED" && run "$mode" -- tar xf "$SHIM_TMP/x.tar") ||
		fail "tar x under the shim failed ($mode)"
	for f in a b; do
		cmp -s "$src/$f" "$SERVED/$f" || fail "tar x: $f differs ($mode)"
		got=$(stat -c %Y "$SERVED/$f")
		[ "$got" = "$want" ] ||
			fail "tar x: $f mtime $(date -d @"$got") not 2001-01-01 ($mode)"
	done
	cp "$src/b" "$SERVED/c"
	touch -d 2002-02-02 "$SERVED/c"
	(cd "$SERVED" && run "$mode" -- gzip -k c) || fail "gzip -k failed ($mode)"
	got=$(stat -c %Y "$SERVED/c.gz")
	[ "$got" = "$(date -d 2002-02-02 +%s)" ] ||
		fail "gzip -k: c.gz mtime $(date -d @"$got") not 2002-02-02 ($mode)"
	gzip -dc "$SERVED/c.gz" | cmp -s - "$src/b" || fail "gzip -k: bad data ($mode)"
	# set the times, then write: the write moves the mtime (kernel rule)
	run "$mode" -- python3 - "$SERVED/d" <<'PYEOF' || fail "python writer failed ($mode)"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"x" * 10000)
os.utime(fd, (978307200, 978307200))
os.write(fd, b"y" * 10000)
os.close(fd)
PYEOF
	got=$(stat -c %Y "$SERVED/d")
	[ "$got" -gt $(($(date +%s) - 600)) ] ||
		fail "a write after futimens did not move the mtime ($mode): $(date -d @"$got")"
	echo "ok: $mode: tar x and gzip -k keep the mtimes they set; a later write moves it"
done
