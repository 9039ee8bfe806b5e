#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shim does not cut the program's interruptible reads short. A read
# of /dev/zero (or a tty, /dev/urandom) returns what it has so far when
# signal_pending() turns true, which task work aimed at the thread does
# too; the kernel alone almost never cuts one. wtio used to: the ring
# it probes io_uring with was closed at set-up, and the kernel's exit
# work for it then interrupted the thread a moment later (under load,
# dd if=/dev/zero bs=1M count=8 under the shim wrote a short file in a
# third of the runs), and the completions of io_uring channels the
# thread submits to are task work too. Here, in every mode, a process
# makes the shim's cache (a served open) and at once reads /dev/zero in
# 256 MiB calls, writing the served file between them: every read whole
# (before: the first read short in every run, in DONTCACHE most).
. "$(dirname "$0")/shim-lib.sh"

PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed: the reader cannot run"

cat >"$SHIM_TMP/zero-reader.py" <<'PYEOF'
import os, sys
z = os.open("/dev/zero", os.O_RDONLY)
# The shim's cache is made at this open; the read follows at once and
# is long (256 MiB), so that what the set-up leaves behind meets it.
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
want = 256 << 20
short = []
for i in range(4):
    n = len(os.read(z, want))
    if n != want:
        short.append((i, n))
    os.write(fd, b"y" * 4096)      # and the cache is used between reads
os.close(fd)
print("short reads:", len(short), short[:4])
PYEOF

# served or not: the counters the shim appends at exit (no --debug,
# whose lines would let the thread run its pending task work first)
counter() {
	sed -n 's/.*wtio-preload\[[0-9]*\]: stats //p' "$2" | tail -1 |
		awk -v k="$1" '{ for (i = 1; i < NF; i += 2) if ($i == k) print $(i + 1) }'
}

total=0
for mode in writeback writethrough dontcache adaptive; do
	for run in 1 2; do
		st=$SHIM_TMP/stats.$mode.$run
		rm -f "$st"
		# (without meson's MALLOC_PERTURB_, whose slower set-up let
		# the old exit work land before the read)
		out=$(WTIO_STATS=$st run "$mode" -- env -u MALLOC_PERTURB_ \
			"$PY" "$SHIM_TMP/zero-reader.py" \
			"$SERVED/f$run" 2>&1) || fail "$mode run $run: exit $?: $out"
		w=$(counter bytes_written "$st")
		[ -n "$w" ] && [ "$w" -ge 16384 ] ||
			fail "$mode: the file was not served (bytes_written '$w'): $(cat "$st" 2>/dev/null)"
		grep -q "short reads: 0 " <<<"$out" ||
			fail "$mode run $run: reads of /dev/zero cut short under the shim: $(grep 'short reads' <<<"$out")"
		total=$((total + 4))
	done
done
echo "ok: $total reads of 256 MiB from /dev/zero under the shim, right after the cache was made and between its writes, 4 modes: none short"
exit 0
