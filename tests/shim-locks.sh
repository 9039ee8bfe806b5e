#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# POSIX record locks (fcntl F_SETLK, lockf) that a program holds on a served
# file survive the shim's own closes of descriptors of that file (closing
# ANY descriptor of a file drops the process's POSIX locks on it): mmap
# demotion, posix_fallocate, truncate by path (once and 40 times, without
# piling up descriptors), copy_file_range into the file, a second open of
# it, and a passthrough peer followed by another lock. Another process checks that the lock is still held; closing the
# program's own descriptor still releases it, and leaves no descriptor of
# the file open. Then two sqlite3 processes in WAL mode insert at once (the
# -shm locks vanished on mmap: SIGBUS, rows lost), in each mode.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"

srun() {
	local mode=$1
	shift
	timeout 60 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M "$@"
}

for mode in $MODES; do
	rm -rf "${SERVED:?}"/*
	out=$(srun "$mode" -- "$PY" - "$SERVED" 2>&1 <<'EOF'
import fcntl, mmap, os, struct, subprocess, sys, time
d = sys.argv[1]
bad = []
# the checker runs without the shim: it must see the kernel's locks only
env = {k: v for k, v in os.environ.items() if k != 'LD_PRELOAD'}
CHECK = '''
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, int(sys.argv[2]))
    print('unlocked')
except OSError:
    print('locked')
'''

def held(path, start=100):
    r = subprocess.run([sys.executable, '-c', CHECK, path, str(start)],
                       env=env, capture_output=True, text=True)
    return r.stdout.strip() == 'locked'

def open_fds(path):
    n = 0
    for f in os.listdir('/proc/self/fd'):
        try:
            if os.readlink('/proc/self/fd/' + f) == path:
                n += 1
        except OSError:
            pass
    return n

def locked_file(name, how='lockf'):
    path = d + '/' + name
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    os.write(fd, b'x' * 8192)
    if how == 'lockf':
        os.lseek(fd, 100, os.SEEK_SET)
        os.lockf(fd, os.F_TLOCK, 1)		# lockf(3), at the position
        os.lseek(fd, 0, os.SEEK_END)
    else:
        fcntl.fcntl(fd, fcntl.F_SETLK,
                    struct.pack('hhqqi', fcntl.F_WRLCK, 0, 100, 1, 0))
    if not held(path):
        bad.append('%s: lock not taken' % name)
    return path, fd

def release(name, path, fd, leak_check=True):
    os.close(fd)
    if held(path):
        bad.append('%s: lock still held after close' % name)
    if leak_check and open_fds(path):
        bad.append('%s: %d descriptors of the file left open' %
                   (name, open_fds(path)))

# mmap: the file passes through from now on (wtio's handles close)
path, fd = locked_file('mmap')
m = mmap.mmap(fd, 8192)
if not held(path):
    bad.append('mmap: lock lost')
m.close()
release('mmap', path, fd, leak_check=False)	# its lock descriptor stays

# posix_fallocate: handles closed and reopened around the call
path, fd = locked_file('falloc', 'fcntl')
os.posix_fallocate(fd, 0, 65536)
if not held(path):
    bad.append('posix_fallocate: lock lost')
release('falloc', path, fd)

# truncate by path: a descriptor of the shim's own, opened and closed
path, fd = locked_file('trunc')
os.truncate(path, 4096)
if not held(path):
    bad.append('truncate by path: lock lost')
os.ftruncate(fd, 2048)
if not held(path):
    bad.append('ftruncate: lock lost')
release('trunc', path, fd)

# again and again: the shim's descriptors must not pile up (nor the
# oldest be closed to bound them)
path, fd = locked_file('repeat', 'fcntl')
for i in range(40):
    os.posix_fallocate(fd, 0, 8192 * (i + 2))
    os.truncate(path, 8192)
if not held(path):
    bad.append('40 x posix_fallocate + truncate: lock lost')
if open_fds(path) > 6:
    bad.append('40 x posix_fallocate + truncate: %d descriptors of the file'
               % open_fds(path))
release('repeat', path, fd)

# copy_file_range into the served file
src = os.open(d + '/src', os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.write(src, b's' * 4096)
os.lseek(src, 0, os.SEEK_SET)
path, fd = locked_file('copy', 'fcntl')
os.lseek(fd, 0, os.SEEK_SET)
os.copy_file_range(src, fd, 4096)
os.close(src)
if not held(path):
    bad.append('copy_file_range: lock lost')
release('copy', path, fd)

# a second open of the locked file (wtio opens and closes a descriptor);
# closing that second descriptor releases the lock, as in the kernel
path, fd = locked_file('second')
fd2 = os.open(path, os.O_RDONLY)
if not held(path):
    bad.append('second open: lock lost')
os.close(fd2)
if held(path):
    bad.append('second open: lock still held after closing fd2')
release('second', path, fd)

# a passthrough peer announces itself; the next lock demotes the file
path, fd = locked_file('peer')
peer = subprocess.Popen([sys.executable, '-c',
                         'import os, sys; fd = os.open(sys.argv[1], os.O_RDWR);'
                         ' print("ready", flush=True); sys.stdin.read()', path],
                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
peer.stdout.readline()
os.lseek(fd, 200, os.SEEK_SET)
os.lockf(fd, os.F_TLOCK, 1)
if not held(path):
    bad.append('peer demotion: lock lost')
peer.stdin.close(); peer.wait()
release('peer', path, fd, leak_check=False)
print('\n'.join(bad) if bad else 'ok')
EOF
)
	[ "$out" = ok ] || fail "record locks ($mode): $out"
	echo "ok: record locks, mode $mode"
done

if command -v sqlite3 >/dev/null; then
	ins() {
		for i in $(seq 1 200); do
			echo "INSERT INTO t(v) VALUES('p$1-$i');"
		done
	}
	for mode in $MODES; do
		for round in 1 2 3; do
			db=$SERVED/wal.db
			rm -f "$db" "$db"-*
			sqlite3 "$db" "PRAGMA journal_mode=WAL; CREATE TABLE t(v);" >/dev/null
			srun "$mode" -- sqlite3 -cmd ".timeout 20000" "$db" "$(ins 1)" >"$SHIM_TMP/p1" 2>&1 &
			p1=$!
			srun "$mode" -- sqlite3 -cmd ".timeout 20000" "$db" "$(ins 2)" >"$SHIM_TMP/p2" 2>&1 &
			p2=$!
			wait $p1 || fail "sqlite3 WAL, process 1 ($mode): $(cat "$SHIM_TMP/p1")"
			wait $p2 || fail "sqlite3 WAL, process 2 ($mode): $(cat "$SHIM_TMP/p2")"
			c=$(sqlite3 "$db" "SELECT count(*) FROM t; PRAGMA integrity_check;" | tr '\n' ' ')
			[ "$c" = "400 ok " ] || fail "sqlite3 WAL, two processes ($mode, round $round): $c"
		done
		echo "ok: sqlite3 WAL, two processes, mode $mode"
	done
else
	echo "note: sqlite3 not installed; the two-process WAL case is left out"
fi
exit 0
