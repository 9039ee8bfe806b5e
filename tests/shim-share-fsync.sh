#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fsync by another process (issue #11 part 2). Process A, under the shim,
# writes 1 MiB (odd size) to a file and never syncs it (in write-back mode
# it is only in A's cache). Process B opens the file, reads it back (A's
# data must be there as soon as B's open returns), and calls fsync,
# fdatasync, syncfs or sync_file_range on it, without the shim and (fsync)
# under it. Then A is SIGKILLed: with its cache gone, the file must still
# hold every byte A wrote, at the exact size (the kernel's semantics for a
# program whose checkpointer fsyncs what its backends wrote).
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
# the interpreter itself, not a wrapper script (pyenv) that costs seconds
PY=$("$PY" -c "import sys; print(sys.executable)") || skip "python3 does not run"
SIZE=$((1024 * 1024 + 777))

cat >"$SHIM_TMP/fs.py" <<'PYEOF'
import os, sys, time
role, path, ready, size = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = (bytes(range(251)) * (size // 251 + 1))[:size]
if role == "A":
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    for off in range(0, size, 10000):
        os.pwrite(fd, data[off:off + 10000], off)
    open(ready, "w").close()
    time.sleep(600)
else:
    how = sys.argv[5]
    fd = os.open(path, os.O_RDWR)
    got = os.pread(fd, size + 1, 0)
    if got != data:
        print(f"FAIL: B read {len(got)} bytes right after its open, not A's {size}")
        sys.exit(1)
    if how == "fsync":
        os.fsync(fd)
    elif how == "fdatasync":
        os.fdatasync(fd)
    elif how == "syncfs":
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syncfs(fd) != 0:
            print("FAIL: syncfs", ctypes.get_errno()); sys.exit(1)
    elif how == "sync_file_range":
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        # WAIT_BEFORE | WRITE | WAIT_AFTER
        if libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), 7) != 0:
            print("FAIL: sync_file_range", ctypes.get_errno()); sys.exit(1)
    os.close(fd)
PYEOF

one() {
	local mode=$1 how=$2 bshim=$3 a f=$SERVED/file ready=$SHIM_TMP/ready st
	rm -f "$f" "$ready"
	"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" --paths="$SERVED" \
		--cache-size=64M -- "$PY" "$SHIM_TMP/fs.py" A "$f" "$ready" $SIZE &
	a=$!
	for _ in $(seq 1 500); do
		[ -e "$ready" ] && break
		sleep 0.02
	done
	[ -e "$ready" ] || { kill -KILL $a; fail "$mode: A did not get ready"; }
	st=0
	if [ "$bshim" = shim ]; then
		run "$mode" -- "$PY" "$SHIM_TMP/fs.py" B "$f" "$ready" $SIZE "$how" || st=$?
	else
		"$PY" "$SHIM_TMP/fs.py" B "$f" "$ready" $SIZE "$how" || st=$?
	fi
	kill -KILL $a
	wait $a 2>/dev/null
	[ $st = 0 ] || fail "$mode: B ($how, $bshim) failed"
	"$PY" - "$f" $SIZE <<'PYEOF' || fail "$mode: after B's $how ($bshim) and A's death"
import sys
size = int(sys.argv[2])
data = (bytes(range(251)) * (size // 251 + 1))[:size]
got = open(sys.argv[1], "rb").read()
if got != data:
    print(f"FAIL: the file holds {len(got)} bytes, not A's {size}")
    sys.exit(1)
PYEOF
	echo "ok: $mode: B's $how ($bshim) covers A's writes; A killed, nothing lost"
}

for mode in $MODES; do
	hows="fsync"
	# each call once, in the mode where only the cache held the data
	[ "$mode" = writeback ] && hows="fsync fdatasync syncfs sync_file_range"
	for how in $hows; do
		one "$mode" $how plain
	done
	one "$mode" fsync shim
done
echo "PASS: another process's open and sync cover what the shim's process wrote"
