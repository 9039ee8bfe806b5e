#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `wtio-run --shared` when the program's last act is to SIGKILL a child:
# the child is still exiting (a large one tears down its memory for a
# while) when the program's own process has ended. That is no daemon
# left behind: wtio-run must return only after the holder has written
# everything back and written its stats, as when nothing is left. Before,
# the holder saw a child still there, reported the status at once and
# wrote back after wtio-run had returned ("others remain").
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
PY=$(command -v python3) || skip "python3 not installed"
avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
[ "${avail:-0}" -ge 4096 ] || skip "needs 4 GiB of free memory (has ${avail:-?} MiB)"

cat > "$SHIM_TMP/dying.py" <<'PYEOF'
import os, signal, sys
path, mib = sys.argv[1], int(sys.argv[2])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    big = bytearray(b"\x01") * (mib << 20)    # touched: its exit frees it
    os.write(w, b"g")
    signal.pause()
os.close(w)
assert os.read(r, 1) == b"g"
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, bytes(range(256)) * 4096)        # 1 MiB, dirty in the holder
os.close(fd)
os.kill(pid, signal.SIGKILL)
os._exit(0)                                  # not waiting for the child
PYEOF

for round in 1 2 3; do
	srun writeback "$STATS" -- "$PY" "$SHIM_TMP/dying.py" "$SERVED/f" 1536 ||
		fail "round $round: the program failed: $(tail -3 "$STATS.log")"
	[ -s "$STATS" ] ||
		fail "round $round: no holder stats at wtio-run's return (it returned before the write-back): $(grep -i remain "$STATS.log")"
	grep -q '^dirty_lost_bytes 0$' "$STATS" ||
		fail "round $round: stats incomplete or data lost: $(tail -3 "$STATS")"
	[ "$(stat -c %s "$SERVED/f")" = 1048576 ] || fail "round $round: size $(stat -c %s "$SERVED/f")"
	echo "ok: round $round: the SIGKILLed child's exit waited for, stats and data there at return"
done
echo "PASS: shim-shared-dying"
