#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The per-process shim reads a served file's kernel size (before each
# fsync and fdatasync, and after a short read) without querying its
# times. On a filesystem with multigrain timestamps a ctime query
# obliges the next write to take a fine-grained time and log it: an XFS
# transaction a NOWAIT direct write cannot take, so io_uring handed every
# fdatasync's write-back to an io-wq worker (5016 of 5000 pwrite +
# fdatasync pairs before). Seen through the timestamp:fill_mg_cmtime
# tracepoint (root, tracefs), filtered to the test file's inode: 200
# pwrite + fdatasync pairs under wtio-run must fire it a handful of times
# at most, where a control `stat` of the file fires it.
. "$(dirname "$0")/shim-lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (tracefs)"
T=/sys/kernel/tracing
[ -d "$T/instances" ] || T=/sys/kernel/debug/tracing
[ -d "$T/instances" ] || skip "no tracefs instances"
[ -d "$T/events/timestamp/fill_mg_cmtime" ] ||
	skip "no timestamp:fill_mg_cmtime tracepoint (kernel without multigrain timestamps)"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
N=200
I=$T/instances/wtio-shim-sq-$$
mkdir "$I" || skip "cannot make a trace instance"
trap 'echo 0 > "$I/events/timestamp/fill_mg_cmtime/enable" 2>/dev/null; rmdir "$I" 2>/dev/null; rm -rf "$SHIM_TMP"' EXIT

F=$SERVED/f
"$PY" -c "import os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644); os.pwrite(fd, bytes(1 << 20), 0); os.fsync(fd)" "$F"
ino=$(stat -c %i "$F")
echo "ino == $ino" > "$I/events/timestamp/fill_mg_cmtime/filter" ||
	skip "the tracepoint takes no inode filter"
hits() { grep -c 'fill_mg_cmtime:' "$I/trace"; }

# control: a stat of the file is seen
echo > "$I/trace"
echo 1 > "$I/events/timestamp/fill_mg_cmtime/enable"
stat "$F" >/dev/null
c=$(hits)
[ "$c" -ge 1 ] || skip "a stat of $F fires no fill_mg_cmtime here (no multigrain timestamps on this filesystem)"

for mode in writeback writethrough; do
	echo > "$I/trace"
	run "$mode" -- "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
for i in range(int(sys.argv[2])):
    os.pwrite(fd, b"x" * 8192, (i % 128) * 8192)
    os.fdatasync(fd)
os.close(fd)' "$F" "$N" || fail "$mode: the program failed"
	h=$(hits)
	[ "$h" -le 10 ] ||
		fail "$mode: $N pwrite + fdatasync pairs queried the file's times $h times (want a handful at most): the shim's size check asks for them"
	echo "ok: $mode: $N pwrite + fdatasync pairs, $h time queries (a stat: $c)"
done
# the data is there (the file is written back at the end)
"$PY" -c "import sys; d = open(sys.argv[1], 'rb').read(); sys.exit(0 if d[:8192 * 128] == b'x' * (8192 * 128) else 1)" "$F" ||
	fail "the written bytes are not on disk"
echo "PASS: the shim's size checks do not query the file's times"
