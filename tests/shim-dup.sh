#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A served file moved by dup2/dup3/F_DUPFD onto another descriptor stays
# served there, 0 and 1 included (dd's if= and of=, a shell's "exec >f"):
# dd keeps every byte and is served (no pass-through), bash's builtins
# write and read descriptors 0 and 1 through libc's stdio and keep every
# byte, and closing the source or the target descriptor of a dup keeps
# the other working, in each mode.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || echo "note: python3 not installed; its cases are left out"

D=$SERVED
srun() {
	local mode=$1
	shift
	timeout 60 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M "$@"
}
ref=$SHIM_TMP/ref.bin	# outside the served paths
head -c $((8 << 20)) /dev/urandom >"$ref" || fail "make reference"
head -c 12345 /dev/urandom >>"$ref" || fail "make reference"
size=$(stat -c %s "$ref")
seq 1 20000 >"$SHIM_TMP/lines"

for mode in $MODES; do
	rm -rf "${D:?}"/*
	# dd: of= and if= are moved onto 1 and 0 by dup2
	out=$(srun "$mode" --debug -- dd if="$ref" of="$D/a" bs=1M status=none 2>&1) ||
		fail "dd in ($mode): $out"
	grep -q "fd 1 .*served on this number too" <<<"$out" ||
		fail "dd's of= not served on fd 1 ($mode): $out"
	grep -q "passing the file through" <<<"$out" &&
		fail "dd's of= passed through ($mode): $out"
	out=$(srun "$mode" --debug -- dd if="$D/a" of="$D/b" bs=64k conv=fsync status=none 2>&1) ||
		fail "dd served->served ($mode): $out"
	grep -q "fd 0 .*served on this number too" <<<"$out" ||
		fail "dd's if= not served on fd 0 ($mode): $out"
	grep -q "passing the file through" <<<"$out" &&
		fail "dd served->served passed through ($mode): $out"
	srun "$mode" -- dd if="$D/b" of="$D/c" bs=3333 status=none ||
		fail "dd odd blocks ($mode)"
	for f in a b c; do
		cmp "$ref" "$D/$f" || fail "dd lost bytes: $f ($mode)"
		[ "$(stat -c %s "$D/$f")" = "$size" ] || fail "dd size of $f ($mode)"
	done

	# bash: builtins on 0 and 1 through stdio, the redirections by
	# dup2 (and the shell's saved copies on 10 and up, F_DUPFD)
	srun "$mode" -- bash -c "
		exec 5>&1
		exec >$D/s
		for i in 1 2 3; do echo line\$i; done
		printf '%s\n' tail
		exec 1>&5 5>&-
		{ echo x; printf 'y%s\n' z; } > $D/t
		echo more >> $D/t
		exec 3<$D/s
		exec 0<&3 3<&-
		read a; read b
		IFS= read -r -d '' rest
		printf '%s|%s|%s' \"\$a\" \"\$b\" \"\$rest\" > $D/r
	" </dev/null || fail "bash redirections ($mode)"
	printf 'line1\nline2\nline3\ntail\n' | cmp -s - "$D/s" ||
		fail "bash exec >f lost output ($mode): $(od -An -c "$D/s" | head -3)"
	printf 'x\nyz\nmore\n' | cmp -s - "$D/t" ||
		fail "bash { } > f / >> ($mode): $(od -An -c "$D/t" | head -3)"
	printf 'line1|line2|line3\ntail\n' | cmp -s - "$D/r" ||
		fail "bash read from a served stdin ($mode): $(od -An -c "$D/r" | head -3)"
	# a larger stream through bash's stdout: every byte
	srun "$mode" -- bash -c "while IFS= read -r l; do echo \"\$l\"; done < $SHIM_TMP/lines > $D/u" ||
		fail "bash read/echo loop ($mode)"
	cmp -s "$SHIM_TMP/lines" "$D/u" || fail "bash read/echo loop lost lines ($mode)"

	if [ -n "$PY" ]; then
		out=$(srun "$mode" -- "$PY" - "$D" 2>&1 <<'EOF'
import fcntl, os, sys
d = sys.argv[1]
bad = []
a = bytes(range(256)) * 300 + b'end'

# dup2 onto 0, close the source: the target goes on, reads see the writes
fd = os.open(d + '/p', os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.dup2(fd, 0)
os.close(fd)
if os.write(0, a) != len(a):
    bad.append('short write on fd 0')
os.lseek(0, 0, os.SEEK_SET)
got = b''
while True:
    c = os.read(0, 10000)
    if not c:
        break
    got += c
if got != a:
    bad.append('fd 0 read back %d of %d bytes' % (len(got), len(a)))
# dup onto 7, close the target 0: 7 goes on at the shared position
os.dup2(0, 7)
os.close(0)
os.write(7, b'more')
# F_DUPFD lands on the lowest free number (0 again), close 7
n = fcntl.fcntl(7, fcntl.F_DUPFD, 0)
os.close(7)
if n != 0:
    bad.append('F_DUPFD gave %d, not 0' % n)
os.write(n, b'last')
if os.lseek(n, 0, os.SEEK_CUR) != len(a) + 8:
    bad.append('position %d after the writes' % os.lseek(n, 0, os.SEEK_CUR))
if os.fstat(n).st_size != len(a) + 8:
    bad.append('fstat size %d' % os.fstat(n).st_size)
os.close(n)
if open(d + '/p', 'rb').read() != a + b'morelast':
    bad.append('file content after the closes')

# dup3 onto 1 with O_CLOEXEC, stdio of Python writes there
fd = os.open(d + '/q', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
saved = os.dup(1)
os.dup2(fd, 1, inheritable=False)
os.close(fd)
sys.stdout.write('hello\n' * 1000)
sys.stdout.flush()
os.dup2(saved, 1)
os.close(saved)
if open(d + '/q').read() != 'hello\n' * 1000:
    bad.append('stdout moved onto a served file lost bytes')
print('\n'.join(bad) if bad else 'ok')
EOF
) || fail "python dup cases ($mode): $out"
		[ "$out" = ok ] || fail "python dup cases ($mode): $out"
	fi
	echo "ok: dup2/dup3/F_DUPFD onto 0, 1 and others, mode $mode"
done
exit 0
