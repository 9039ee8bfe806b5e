#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ulimit -f (RLIMIT_FSIZE) on served files, as the kernel applies it: a
# write at or past the limit is EFBIG (and SIGXFSZ), one crossing it is
# cut there, a truncate growing past it is EFBIG. A Python program that
# ignores SIGXFSZ records every result; under both shims, in every mode,
# they and the file's size must be the kernel's. Before: the per-process
# shim took every write into its cache (close then failed with EFBIG,
# the data past the limit lost); under --shared the holder inherited
# the limit and was killed by SIGXFSZ at its write-back.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3) || skip "python3 not installed"

cat > "$SHIM_TMP/fz.py" <<'PYEOF'
import os, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
p = sys.argv[1]
fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
out = []
def call(f, *a):
    try: out.append(f(*a))
    except OSError as e: out.append(e.strerror)
call(os.pwrite, fd, b"x", 5 << 20)                 # past: EFBIG
call(os.pwrite, fd, b"y" * 4096, (2 << 20) - 100)  # crossing: 100
call(os.ftruncate, fd, 6 << 20)                    # growing past: EFBIG
call(os.ftruncate, fd, 1 << 20)                    # shrinking: fine
for i in range(3):                                 # appends to the limit
    call(os.write, fd, b"z" * (1 << 20))
call(os.close, fd)
print(out, os.stat(p).st_size)
PYEOF

want=$(ulimit -f 2048; "$PY" "$SHIM_TMP/fz.py" "$SERVED/bare" 2>&1)
echo "the kernel: $want"
for shared in "" --shared; do
	for mode in writeback writethrough dontcache; do
		rm -f "$SERVED/f"
		got=$( (ulimit -f 2048; run "$mode" $shared -- "$PY" "$SHIM_TMP/fz.py" "$SERVED/f") 2>&1)
		[ "$got" = "$want" ] ||
			fail "${shared:-per-process} $mode: '$got', the kernel's: '$want'"
		cmp -s "$SERVED/f" "$SERVED/bare" ||
			fail "${shared:-per-process} $mode: the file's bytes differ from the kernel's"
		echo "ok: ${shared:-per-process} $mode: results and file as the kernel's"
	done
done
# the default action: dd stops at the limit, killed by SIGXFSZ
(ulimit -f 2048; dd if=/dev/zero of="$SERVED/dbare" bs=1M count=5 2>/dev/null)
brc=$?
for shared in "" --shared; do
	rm -f "$SERVED/d"
	(ulimit -f 2048; run writeback $shared -- dd if=/dev/zero of="$SERVED/d" bs=1M count=5 2>/dev/null)
	rc=$?
	[ "$rc" = "$brc" ] && [ "$(stat -c %s "$SERVED/d")" = "$(stat -c %s "$SERVED/dbare")" ] ||
		fail "${shared:-per-process} dd: exit $rc, $(stat -c %s "$SERVED/d") bytes; the kernel's: $brc, $(stat -c %s "$SERVED/dbare")"
	echo "ok: ${shared:-per-process} dd: exit $rc (SIGXFSZ), $(stat -c %s "$SERVED/d") bytes, as the kernel"
done
echo "PASS: shim-fsize-limit"
