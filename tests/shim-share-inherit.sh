#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Descriptions that reach another process without an open, which breaks
# no lease (issue #11): a process under the shim writes a file (in
# write-back mode only its cache has the data), then hands the descriptor
# on by fork, by SCM_RIGHTS over a socket to a process outside the shim,
# by exec (an inherited descriptor), and by a subprocess with pass_fds. The
# other side reads what was written through the descriptor it got and
# writes more; the first process then reads that back. Every mode.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
PY=$("$PY" -c "import sys; print(sys.executable)") || skip "python3 does not run"

cat >"$SHIM_TMP/inh.py" <<'PYEOF'
import os, socket, subprocess, sys
how, path = sys.argv[1], sys.argv[2]
A = b"parent wrote this " * 300
B = b"and the other side this " * 200

def fail(msg):
    print(f"FAIL ({how}): {msg}")
    sys.exit(1)

def other_side(fd):
    got = os.pread(fd, len(A) + 10, 0)
    if got != A:
        fail(f"the other side read {len(got)} bytes, not the {len(A)} written")
    if os.fstat(fd).st_size != len(A):
        fail("the other side's fstat size differs")
    os.pwrite(fd, B, len(A))

if how == "exec-child":
    other_side(int(sys.argv[3]))
    sys.exit(0)

def create():
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(fd, A, 0)
    return fd

# (scm: the receiver is started first, so that no fork sees the file)
fd = create() if how != "scm" else -1
if how == "fork":
    pid = os.fork()
    if pid == 0:
        other_side(fd)
        os._exit(0)
    _, st = os.waitpid(pid, 0)
elif how == "scm":
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    child = subprocess.Popen([sys.executable, "-c", """
import os, socket, sys
s = socket.socket(fileno=int(sys.argv[1]))
_, fds, _, _ = socket.recv_fds(s, 10, 1)
fd = fds[0]
A = b"parent wrote this " * 300
B = b"and the other side this " * 200
got = os.pread(fd, len(A) + 10, 0)
if got != A:
    print("FAIL (scm): the receiver read", len(got), "bytes"); sys.exit(1)
os.pwrite(fd, B, len(A))
""", str(b.fileno())], pass_fds=[b.fileno()], env=env)
    fd = create()
    socket.send_fds(a, [b"x"], [fd])
    st = child.wait() << 8
elif how == "exec":
    os.set_inheritable(fd, True)
    pid = os.fork()
    if pid == 0:
        # the child execs at once (the fork already passed it through);
        # a spawn: posix_spawn with the descriptor inherited
        os.execv(sys.executable, [sys.executable, sys.argv[0], "exec-child", path, str(fd)])
    _, st = os.waitpid(pid, 0)
elif how == "spawn":
    os.set_inheritable(fd, True)
    pid = os.posix_spawn(sys.executable, [sys.executable, sys.argv[0], "exec-child", path, str(fd)], os.environ)
    _, st = os.waitpid(pid, 0)
if st != 0:
    fail(f"the other side exited {st}")
got = os.pread(fd, len(A) + len(B) + 10, 0)
if got != A + B:
    fail(f"read back {len(got)} bytes, not what both wrote ({len(A) + len(B)})")
if os.lseek(fd, 0, os.SEEK_END) != len(A) + len(B):
    fail("SEEK_END differs")
# The position the program sets after the hand-off is the kernel's one: a
# shell given the descriptor reads from there (a flush of the passed-
# through file once put the served position of before back).
os.set_inheritable(fd, True)
os.lseek(fd, 2000, os.SEEK_SET)
os.system(f"head -c 20 <&{fd} >'{path}.pos'")
with open(path + ".pos", "rb") as f:
    got = f.read()
os.unlink(path + ".pos")
if got != (A + B)[2000:2020]:
    fail(f"a shell given the descriptor after lseek(2000) read {got!r}")
os.close(fd)
print(f"ok ({how})")
PYEOF

for mode in $MODES; do
	for how in fork scm exec spawn; do
		rm -f "$SERVED/f"
		out=$(run "$mode" --debug -- "$PY" "$SHIM_TMP/inh.py" $how "$SERVED/f" 2>&1) ||
			fail "$mode, $how: $(grep -v '^wtio-preload' <<<"$out")"
		grep -q "served by wtio" <<<"$out" || fail "$mode, $how: nothing served"
		cmp -s <("$PY" -c "import sys; sys.stdout.buffer.write(b'parent wrote this ' * 300 + b'and the other side this ' * 200)") "$SERVED/f" ||
			fail "$mode, $how: the file afterwards"
	done
	echo "ok: $mode: fork, SCM_RIGHTS, exec, posix_spawn"
done
echo "PASS: descriptors handed on without an open stay coherent"
