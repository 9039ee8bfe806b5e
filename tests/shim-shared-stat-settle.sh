#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A stat by path of a file the holder is closing or demoting gets the
# size the program wrote, never one from the middle of that write-back.
# The shim takes the kernel's stat first and then asks the holder; while
# the file was BUSY (its last close, when the writer's exit dropped the
# last reference; or a demotion) the holder said "not served" and the
# kernel's size of the moment stood: `python3 writer; stat -c %s f` saw
# 0, 1, 2 or 3 MiB of a 4 MiB file in about 13 of 30 rounds (review 6,
# F3). Now the holder waits for the end and says the file left just now,
# and the shim stats again.
# Part 1 holds a demotion's window open with the holder's test hook
# WTIO_RUN_TEST_DEMOTE_DELAY_US (the file not yet written back: the
# kernel's size is 0) while another process stats the file; part 2 is
# the exit race itself, 30 rounds.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"

cat >"$SHIM_TMP/demote.py" <<'PYEOF'
import fcntl, os, subprocess, sys, threading, time
path = sys.argv[1]
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(4):
    os.write(fd, b"d" * (1 << 20))
# the first lock demotes the file: the holder holds the window (hook)
t = threading.Thread(target=fcntl.lockf, args=(fd, fcntl.LOCK_EX))
t.start()
time.sleep(0.3)     # into the window (the hook holds it 2 s)
out = subprocess.run(["stat", "-c", "%s", path], capture_output=True,
                     text=True).stdout.strip()
t.join()
print(out)
PYEOF

for mode in writeback writethrough; do
	rm -f "$SERVED"/*
	out=$(WTIO_RUN_TEST_DEMOTE_DELAY_US=2000000 srun "$mode" "$STATS" -- \
		"$PY" "$SHIM_TMP/demote.py" "$SERVED/d" 2>&1) ||
		fail "$mode: demotion run: $out"
	wait_holder "$STATS"
	[ "$out" = 4194304 ] ||
		fail "$mode: stat during a demotion: '$out', want 4194304 (the kernel's size from the middle of the write-back)"
	echo "ok: $mode: stat during a demotion: $out"
done

cat >"$SHIM_TMP/exit.sh" <<'SHEOF'
cd "$1"
bad=0
for i in $(seq 1 30); do
	rm -f w
	"$2" -c "
import os
fd = os.open('w', os.O_RDWR | os.O_CREAT, 0o644)
for i in range(4): os.write(fd, b'y' * (1 << 20))
"
	s=$(stat -c %s w)
	[ "$s" = 4194304 ] || { echo "round $i: stat $s"; bad=$((bad + 1)); }
done
echo "bad $bad"
SHEOF
out=$(srun writeback "$STATS" -- bash "$SHIM_TMP/exit.sh" "$SERVED" "$PY" 2>&1) ||
	fail "exit race run: $out"
wait_holder "$STATS"
[ "$(tail -1 <<<"$out")" = "bad 0" ] ||
	fail "a writer's exit, then stat: $out"
echo "ok: 30 writers exited without close, each stat right after: 4194304"
echo "PASS: a stat of a file the holder is closing or demoting waits for its size"
