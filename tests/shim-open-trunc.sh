#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An open with O_TRUNC that the kernel refuses fails under the shim too,
# and changes nothing. The shim opens without O_TRUNC and truncates
# afterwards (through wtio for a served file); the kernel refuses
# O_TRUNC on an append-only file (chattr +a) with EPERM at the open.
# Found by a hostile review: under wtio-run the open returned a
# descriptor, the truncation's EPERM was ignored, and the program's
# "new" file was the old one with its write appended, for served files
# and passed-through ones alike. Every mode, --shared too. And access
# mode 3 with O_TRUNC, which the kernel truncates, still does.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
command -v chattr >/dev/null || skip "chattr (e2fsprogs) not installed"
[ "$(id -u)" = 0 ] || skip "chattr +a needs root"

D=$SERVED
OUT=$SHIM_TMP/elsewhere	# not under --paths: passed through
mkdir -p "$OUT"
printf 'old content\n' >"$D/probe"
chattr +a "$D/probe" 2>/dev/null ||
	skip "the filesystem of $D takes no append-only flag"
chattr -a "$D/probe"

cat >"$SHIM_TMP/t.py" <<'EOF'
import errno, os, sys
p = sys.argv[1]
for flags in (os.O_WRONLY | os.O_APPEND | os.O_TRUNC,
              os.O_RDWR | os.O_APPEND | os.O_TRUNC,
              os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC):
    try:
        fd = os.open(p, flags, 0o644)
        os.write(fd, b"new\n")
        os.close(fd)
        print("open %#o succeeded" % flags)
    except OSError as e:
        if e.errno != errno.EPERM:
            print("open %#o: %s, want EPERM" % (flags, errno.errorcode[e.errno]))
# access mode 3 (for ioctls) with O_TRUNC truncates, bare and here (a
# review: the shim's own truncate through a descriptor that cannot
# write failed the open with EINVAL)
q = p + ".acc3"
with open(q, "wb") as f:
    f.write(b"hello")
try:
    os.close(os.open(q, 3 | os.O_TRUNC))
    if os.stat(q).st_size != 0:
        print("open 3|O_TRUNC left %d bytes" % os.stat(q).st_size)
except OSError as e:
    print("open 3|O_TRUNC: %s" % errno.errorcode[e.errno])
os.unlink(q)
# appending without O_TRUNC is allowed
fd = os.open(p, os.O_WRONLY | os.O_APPEND)
os.write(fd, b"more\n")
os.close(fd)
print("done")
EOF

check() {	# check LABEL FILE OUTPUT
	[ "$3" = done ] || fail "$1: $3"
	[ "$(cat "$2")" = "$(printf 'old content\nmore')" ] ||
		fail "$1: the file holds $(od -c "$2" | head -3)"
}

for mode in $MODES; do
	for shared in "" --shared; do
		for f in "$D/ao" "$OUT/ao"; do
			[ -e "$f" ] && chattr -a "$f"
			printf 'old content\n' >"$f"
			chattr +a "$f"
			out=$(run "$mode" $shared -- "$PY" "$SHIM_TMP/t.py" "$f" 2>&1)
			chattr -a "$f"
			check "$mode $shared $f" "$f" "$out"
		done
		echo "ok: O_TRUNC of an append-only file is EPERM and changes nothing, mode $mode $shared"
	done
done
