#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A descriptor the program opened O_WRONLY stays write-only, as the
# kernel's, when its file is passed through. While served, the shim
# reads around partial blocks through an O_RDWR description put in its
# place; passed through (a fork or an exec of the program, sendfile,
# copy_file_range, mmap), the program's descriptors get a write-only one
# back at the same position: the kernel's flags show O_WRONLY, and read,
# pread, sendfile and copy_file_range from it fail with EBADF, mmap with
# PROT_READ with EACCES, in an exec'd shell too (cat <&3). Every byte
# written stays. Found by a hostile review: the descriptor was left
# O_RDWR and all of those read the file.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"

D=$SERVED

cat >"$SHIM_TMP/wo.py" <<'EOF'
import errno, mmap, os, sys
d = sys.argv[1]
out = []
def want(name, f, err):
    try:
        r = f()
        out.append("%s: got %r, want %s" % (name, r, errno.errorcode[err]))
    except OSError as e:
        if e.errno != err:
            out.append("%s: %s, want %s" % (name, errno.errorcode[e.errno],
                                            errno.errorcode[err]))
def flags(fd):
    with open("/proc/self/fdinfo/%d" % fd) as f:
        for line in f:
            if line.startswith("flags:"):
                return int(line.split()[1], 8) & 3
fd = os.open(d + "/wo", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"secret" * 1000)
want("pread while served", lambda: os.pread(fd, 10, 0), errno.EBADF)
null = os.open("/dev/null", os.O_WRONLY)
# sendfile passes the file through (a kernel copy reads it)
want("sendfile", lambda: os.sendfile(null, fd, 0, 10), errno.EBADF)
if flags(fd) != os.O_WRONLY:
    out.append("flags after the pass-through: %d, want O_WRONLY" % flags(fd))
want("pread passed through", lambda: os.pread(fd, 10, 0), errno.EBADF)
want("read passed through", lambda: os.read(fd, 10), errno.EBADF)
dst = os.open(d + "/wo2", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
want("copy_file_range", lambda: os.copy_file_range(fd, dst, 10, 0, 0), errno.EBADF)
want("mmap PROT_READ", lambda: mmap.mmap(fd, 6000, prot=mmap.PROT_READ), errno.EACCES)
# the position is the served one
os.write(fd, b"tail")
if os.lseek(fd, 0, os.SEEK_CUR) != 6004:
    out.append("position %d, want 6004" % os.lseek(fd, 0, os.SEEK_CUR))
os.close(fd)
with open(d + "/wo", "rb") as f:
    if f.read() != b"secret" * 1000 + b"tail":
        out.append("the file's bytes differ")
print("; ".join(out) if out else "ok")
EOF

for mode in $MODES; do
	rm -rf "${D:?}"/*
	out=$(run "$mode" -- "$PY" "$SHIM_TMP/wo.py" "$D" 2>&1) ||
		fail "python ($mode): $out"
	[ "$out" = ok ] || fail "a write-only descriptor passed through ($mode): $out"
	# a shell's descriptor, passed through by the fork of cat
	rm -f "$D/wo"
	out=$(run "$mode" -- bash -c '
		exec 3>"$1/wo"
		echo secret >&3
		awk "/^flags:/ { print \$2 }" /proc/$$/fdinfo/3
		if cat <&3 >/dev/null 2>&1; then echo readable; fi
		echo more >&3
		exec 3>&-' _ "$D" 2>&1) || fail "bash ($mode): $out"
	case $out in
	*readable*) fail "cat read a write-only descriptor ($mode): $out" ;;
	esac
	fl=$(printf '%s\n' "$out" | head -1)
	[ $((8#$fl & 3)) = 1 ] || fail "bash's descriptor flags $fl, want O_WRONLY ($mode)"
	[ "$(cat "$D/wo")" = "$(printf 'secret\nmore')" ] ||
		fail "bash's file: $(od -c "$D/wo" | head -3) ($mode)"
	echo "ok: a write-only descriptor stays write-only when passed through, mode $mode"
done

# A write-only file its writer cannot read (mode 0200, not root): served
# it would need reads around partial blocks, so it passes through, and
# the debug output says why (it used to blame the lease: "not the file's
# owner", for the owner).
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	chmod 711 "$SHIM_TMP"
	W=$SHIM_TMP/open
	mkdir -p "$W" && chmod 1777 "$W"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups -- \
		"$WTIO_RUN" --preload="$WTIO_PRELOAD" --paths="$W" --debug -- \
		bash -c 'umask 077; : >"$1/f"; chmod 0200 "$1/f"; echo hello >"$1/f"' _ "$W" 2>&1) ||
		fail "a 0200 file as nobody: $out"
	grep -q "write-only and not readable here" <<<"$out" ||
		fail "a 0200 file: the debug output does not say why it passed through: $out"
	grep -q "not the file's owner" <<<"$out" &&
		fail "a 0200 file: the debug output blames the lease: $out"
	[ "$(cat "$W/f")" = hello ] || fail "a 0200 file: $(cat "$W/f")"
	echo "ok: a write-only file its writer cannot read passes through, and says why"
else
	echo "skipped part (a 0200 file as another user): not root, no user nobody or no setpriv"
fi
exit 0
