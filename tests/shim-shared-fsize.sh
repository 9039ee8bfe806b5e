#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `wtio-run --shared` under a small file size limit (ulimit -f). The
# holder's record, its shared page and each process's buffer are memfds,
# which RLIMIT_FSIZE covers: sizing one past the limit killed wtio-run (or
# each process of the program, at its first served call) with SIGXFSZ
# before anything ran, with no word. Now: a limit below what --shared
# needs is said and wtio-run exits 126 without running the program; a
# limit above it gives the kernel's behaviour (dd stops at the limit with
# SIGXFSZ, the file holds exactly the limit); a process of the program
# that lowers its own limit below a buffer opens its files as the kernel
# does, with the kernel's result.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"

out=$( (ulimit -f 100; srun writeback "$STATS" -- sh -c 'echo ran > "$0"' "$SERVED/ran") 2>&1)
rc=$?
[ $rc = 126 ] || fail "ulimit -f 100: exit status $rc, want 126: $out"
grep -q "needs a file size limit (ulimit -f) of at least" <<<"$out" ||
	fail "ulimit -f 100: not said: $out"
[ ! -e "$SERVED/ran" ] || fail "ulimit -f 100: the program ran"
echo "ok: ulimit -f 100: said, exit 126, the program not run"

# bare first: what the kernel makes of it
size_of() { stat -c %s "$1" 2>/dev/null || echo none; }
(ulimit -f 2000; dd if=/dev/zero of="$SERVED/bare" bs=1k count=3000 2>/dev/null)
brc=$?
want=$(size_of "$SERVED/bare")
for mode in writeback writethrough; do
	rm -f "$SERVED/big"
	(ulimit -f 2000; srun "$mode" "$STATS" -- dd if=/dev/zero of="$SERVED/big" bs=1k count=3000 2>/dev/null)
	rc=$?
	got=$(size_of "$SERVED/big")
	[ "$rc" = "$brc" ] && [ "$got" = "$want" ] ||
		fail "$mode, ulimit -f 2000: exit $rc and $got bytes, the kernel's: $brc and $want"
	echo "ok: $mode, ulimit -f 2000, dd of 3000 KiB: exit $rc, $got bytes, as the kernel"
done

# the program lowers its own limit below a buffer (dash counts 512 bytes)
(sh -c 'ulimit -f 500; dd if=/dev/zero of="$0" bs=1k count=3000 2>/dev/null' "$SERVED/bare2")
brc=$?
want=$(size_of "$SERVED/bare2")
rm -f "$SERVED/big2"
out=$( (ulimit -f 4000; srun writeback "$STATS" -- sh -c 'ulimit -f 500; dd if=/dev/zero of="$0" bs=1k count=3000 2>/dev/null; echo "dd $?"' "$SERVED/big2") 2>&1)
rc=$?
got=$(size_of "$SERVED/big2")
[ "$rc" = 0 ] && [ "$out" = "dd $brc" ] && [ "$got" = "$want" ] ||
	fail "a limit lowered inside the program: wtio-run $rc, '$out', $got bytes; the kernel's: 'dd $brc', $want bytes"
echo "ok: a limit lowered inside the program: dd's exit $brc and $got bytes, as the kernel"
echo "PASS: --shared under a file size limit"
