#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Shells and process spawning under wtio-run, in each mode: dash's
# "cmd > file" (redirect, vfork, restore with dup2), bash's builtins
# appending with ">>" (stdio on fd 1, past any interposer), a served
# descriptor replaced by dup2 after a child grew its file, Python's
# subprocess (vfork, then close_range in the child), a child appending to
# the parent's served O_APPEND descriptor (fork, vfork, posix_spawn).
# (Record locks across the shim's own closes: shim-locks.sh.)
. "$(dirname "$0")/shim-lib.sh"
DASH=$(command -v dash || true)
PY=$(command -v python3 || true)
[ -n "$DASH" ] || echo "note: dash not installed; its cases are left out"
[ -n "$PY" ] || echo "note: python3 not installed; its cases are left out"
[ -n "$DASH$PY" ] || skip "neither dash nor python3 is installed"

D=$SERVED
# run, bounded: a lost wakeup or a loop must fail, not hang the suite
srun() {
	local mode=$1
	shift
	timeout 60 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M "$@"
}
seq 1 100000 >"$SHIM_TMP/ref"

for mode in $MODES; do
	rm -rf "${D:?}"/*
	if [ -n "$DASH" ]; then
		# the redirection is the parent shell's; the child writes
		srun "$mode" -- "$DASH" -c "cat $SHIM_TMP/ref > $D/out; true" ||
			fail "dash redirect ($mode)"
		cmp -s "$D/out" "$SHIM_TMP/ref" || fail "dash redirect lost output ($mode)"
		# a served O_APPEND descriptor, a child appending between two
		# of the shell's own appends
		srun "$mode" -- "$DASH" -c "exec 3>>$D/f; echo a >&3; /bin/echo b >&3; echo c >&3; exec 3>&-; { echo 1; /bin/echo 2; echo 3; } >> $D/g" ||
			fail "dash append ($mode)"
		printf 'a\nb\nc\n' | cmp -s - "$D/f" || fail "dash exec 3>> with a child ($mode): $(od -An -c "$D/f")"
		printf '1\n2\n3\n' | cmp -s - "$D/g" || fail "dash { } >> with a child ($mode): $(od -An -c "$D/g")"
	fi
	# bash builtins write fd 1 through stdio
	srun "$mode" -- bash -c "for i in 1 2 3 4 5; do echo line\$i >> $D/l; done; printf 'x%s\n' y > $D/p" ||
		fail "bash echo ($mode)"
	printf 'line%s\n' 1 2 3 4 5 | cmp -s - "$D/l" || fail "bash echo >> ($mode): $(tr '\n' ' ' <"$D/l")"
	printf 'xy\n' | cmp -s - "$D/p" || fail "bash printf > ($mode)"
	if [ -n "$PY" ]; then
		out=$(srun "$mode" -- "$PY" - "$D" "$SHIM_TMP/ref" 2>&1 <<'EOF'
import os, subprocess, sys
d, ref = sys.argv[1], sys.argv[2]
bad = []

# dup2 onto a served descriptor whose file a child has grown
fd = os.open(d + '/grown', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
subprocess.run(['cat', ref], stdout=fd, check=True)
null = os.open('/dev/null', os.O_WRONLY)
os.dup2(null, fd)
os.close(fd); os.close(null)
if open(d + '/grown', 'rb').read() != open(ref, 'rb').read():
    bad.append('dup2 over a served fd cut what a child wrote')

# subprocess (vfork; the child closes every other descriptor)
fd = os.open(d + '/sub', os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
expect = b''
for i in range(3):
    chunk = (b'%d' % i) * 100000
    os.write(fd, chunk); expect += chunk
    subprocess.run(['true'])
os.close(fd)
if open(d + '/sub', 'rb').read() != expect:
    bad.append('subprocess changed the parent\'s served file')

# children appending to the parent's served O_APPEND descriptor
fd = os.open(d + '/app', os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
os.write(fd, b'a\n')
subprocess.run(['sh', '-c', 'echo b >&%d' % fd], pass_fds=[fd], check=True)
os.write(fd, b'c\n')
pid = os.posix_spawn('/bin/echo', ['echo', 'd'], os.environ,
                     file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1)])
os.waitpid(pid, 0)
os.write(fd, b'e\n')
pid = os.fork()
if pid == 0:
    os.dup2(fd, 1)
    os.execv('/bin/echo', ['echo', 'f'])
os.waitpid(pid, 0)
os.write(fd, b'g\n')
os.close(fd)
got = open(d + '/app', 'rb').read()
if got != b'a\nb\nc\nd\ne\nf\ng\n':
    bad.append('O_APPEND with children: %r' % got)
print('\n'.join(bad) if bad else 'ok')
EOF
)
		[ "$out" = ok ] || fail "python ($mode): $out"
	fi
	echo "ok: shell, mode $mode"
done
exit 0
