#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two or three processes of one program under `wtio-run --shared` take
# their first record lock (or mmap) on a freshly opened served file at
# the same moment, round after round. Each demotes the file (docs/SHIM.md,
# Limits of --shared); the one that comes second must wait for the first
# one's demotion and go on with the kernel's description, never answer
# EIO (the lock failed with EIO about once in 15 runs of
# shim-shared-sqlite.sh before the holder waited). The holder's test hook
# WTIO_RUN_TEST_DEMOTE_DELAY_US holds the window between a demotion's
# claim of the file and its io_lock open, so every round meets it; a run
# without the hook follows. Every increment made under the locks is kept.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
ROUNDS=${LOCK_RACE_ROUNDS:-60}

cat >"$SHIM_TMP/race.py" <<'PYEOF'
import fcntl, mmap, os, struct, sys
d, n, kinds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(",")

def child(kind, rd, wr):
    for i in range(n):
        os.read(rd, 1)
        err = "ok"
        try:
            fd = os.open(os.path.join(d, "f%d" % i), os.O_RDWR)
            os.write(wr, b"o")      # opened: every OFD is there first
            os.read(rd, 1)
            if kind == "lock":
                fcntl.lockf(fd, fcntl.LOCK_EX, 8, 0)
                v = struct.unpack("<Q", os.pread(fd, 8, 0))[0]
                os.pwrite(fd, struct.pack("<Q", v + 1), 0)
                fcntl.lockf(fd, fcntl.LOCK_UN, 8, 0)
            else:
                mmap.mmap(fd, 4096).close()
            os.close(fd)
        except OSError as e:
            err = "%s: %s" % (kind, e)
        os.write(wr, (err + "\n").encode())
    os._exit(0)

pipes = []
for k in kinds:
    a, b = os.pipe()
    c, e = os.pipe()
    if os.fork() == 0:
        child(k, a, e)
    pipes.append((b, c))
bad = 0
for i in range(n):
    fd = os.open(os.path.join(d, "f%d" % i), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.pwrite(fd, bytes(4096), 0)
    os.close(fd)
    for b, _ in pipes:
        os.write(b, b"x")
    for _, c in pipes:
        if os.read(c, 1) != b"o":
            bad += 1
    for b, _ in pipes:          # and now all at once
        os.write(b, b"x")
    for _, c in pipes:
        r = b""
        while not r.endswith(b"\n"):
            r += os.read(c, 100)
        if r != b"ok\n":
            bad += 1
            if bad <= 5:
                print("round %d: %s" % (i, r.decode().strip()), flush=True)
for _ in kinds:
    os.wait()
want = kinds.count("lock")
wrong = [i for i in range(n) if struct.unpack(
    "<Q", open(os.path.join(d, "f%d" % i), "rb").read(8))[0] != want]
print("%d rounds, %d calls failed, %d counters wrong %s" % (n, bad, len(wrong), wrong[:5]))
sys.exit(1 if bad or wrong else 0)
PYEOF

for mode in ${ONLY_MODES:-writeback writethrough}; do
	for kinds in lock,lock mmap,lock lock,lock,lock; do
		for delay in 3000 0; do
			rm -f "$SERVED"/*
			out=$(WTIO_RUN_TEST_DEMOTE_DELAY_US=$delay srun "$mode" "$STATS" -- \
				"$PY" "$SHIM_TMP/race.py" "$SERVED" "$ROUNDS" "$kinds" 2>&1) ||
				fail "$mode $kinds (demotion delay ${delay} us): $out"
			wait_holder "$STATS"
			# served, and demoted by the locks (and maps): the race ran
			served_at_least "$STATS" $((ROUNDS * 2)) "$mode $kinds"
			d=$(demotions "$STATS")
			# (an open may pass through: a file closed a moment ago)
			[ "$d" -ge $((ROUNDS * 9 / 10)) ] ||
				fail "$mode $kinds: $d demotions for $ROUNDS rounds: the files were not served until the lock"
			echo "ok: $mode $kinds, demotion delay ${delay} us: $out ($d demotions)"
		done
	done
done
echo "PASS: simultaneous first locks and maps of a served file wait for one demotion"
