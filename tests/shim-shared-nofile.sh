#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `wtio-run --shared` when the holder runs out of descriptors before the
# program does (REVIEW B9). The holder keeps descriptors of every file it
# serves for every process of the program, two or more a file, so under
# one descriptor limit (ulimit -n, hard and soft) it runs out at about
# half the files the program may open; the program's open then failed
# with EMFILE although the kernel would have opened the file. Now a holder
# short of descriptors answers "not served" and the program opens the
# file with the kernel: every open succeeds, every byte reads back (in the
# program, in a forked child through the inherited descriptors, and on
# disk after the run), a child's new connection and open still work, and
# the holder's stats show files not served for that reason
# (not_served_nofds). Every mode.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
command -v python3 >/dev/null || skip "no python3"
LIMIT=256
NFILES=200	# half of them there before the run, half created by it

cat >"$SHIM_TMP/many.py" <<'EOF'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
def data(i, gen):
    return (f"file {i} gen {gen};" * (50 + i)).encode()
fds = []
for i in range(n):
    flags = os.O_RDWR | (os.O_CREAT if i % 2 else 0)
    try:
        fd = os.open(f"{d}/f{i}", flags, 0o644)
    except OSError as e:
        sys.exit(f"open f{i} ({len(fds)} open): {e}")
    os.write(fd, data(i, 1))
    fds.append(fd)
for i, fd in enumerate(fds):
    os.lseek(fd, 0, os.SEEK_SET)
    got = os.read(fd, 1 << 20)
    if got != data(i, 1):
        sys.exit(f"f{i}: read back {got[:40]!r}...")
pid = os.fork()
if pid == 0:
    # the inherited descriptors, served or not, and a new open (a new
    # connection to the holder)
    for i, fd in enumerate(fds):
        if os.pread(fd, 1 << 20, 0) != data(i, 1):
            os._exit(3)
        os.pwrite(fd, data(i, 2), 0)
    fd = os.open(f"{d}/child", os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"child wrote this")
    if os.pread(fd, 100, 0) != b"child wrote this":
        os._exit(4)
    os.close(fd)
    os._exit(0)
_, st = os.waitpid(pid, 0)
if st != 0:
    sys.exit(f"the child failed: status {st}")
for i, fd in enumerate(fds):
    if os.pread(fd, 1 << 20, 0) != data(i, 2):
        sys.exit(f"f{i}: the child's write not seen")
    os.close(fd)
print("ok", n)
EOF

# the expected contents, made by python3 outside the shim
python3 - "$SHIM_TMP/want" "$NFILES" <<'EOF'
import os, sys
os.mkdir(sys.argv[1])
for i in range(int(sys.argv[2])):
    with open(f"{sys.argv[1]}/f{i}", "wb") as f:
        f.write((f"file {i} gen 2;" * (50 + i)).encode())
with open(f"{sys.argv[1]}/child", "wb") as f:
    f.write(b"child wrote this")
EOF

for mode in $MODES; do
	rm -f "$SERVED"/*
	for i in $(seq 0 2 $((NFILES - 1))); do
		echo "old f$i" >"$SERVED/f$i"	# shorter than the new
	done
	out=$( (ulimit -n $LIMIT; srun "$mode" "$STATS" --debug -- python3 "$SHIM_TMP/many.py" "$SERVED" "$NFILES") 2>&1)
	rc=$?
	wait_holder "$STATS"
	[ $rc = 0 ] && grep -q "^ok $NFILES" <<<"$out" ||
		fail "$mode: ulimit -n $LIMIT, $NFILES files: exit $rc: $(grep -v wtio-preload <<<"$out" | tail -5)"
	for i in $(seq 0 $((NFILES - 1))); do
		cmp -s "$SERVED/f$i" "$SHIM_TMP/want/f$i" ||
			fail "$mode: f$i: not the program's data"
	done
	cmp -s "$SERVED/child" "$SHIM_TMP/want/child" || fail "$mode: the child's file"
	ns=$(stat_of "$STATS" not_served_nofds)
	served=$(stat_of "$STATS" opens_served)
	[ "${ns:-0}" -gt 0 ] ||
		fail "$mode: the holder never ran short of descriptors (not_served_nofds ${ns:-none}): the test does not test"
	[ "${served:-0}" -gt 0 ] || fail "$mode: nothing served"
	grep -q "not served: the holder is short of descriptors" "$STATS.log" ||
		fail "$mode: no debug line for a file not served: $(tail -3 "$STATS.log")"
	echo "ok: $mode: ulimit -n $LIMIT, $NFILES files open: $served served, $ns opened by the kernel (the holder short of descriptors), every byte right"
done
echo "PASS: shim-shared-nofile"
