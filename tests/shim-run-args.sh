#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wtio-run's own input: every bad value is an error (exit 2 and a message,
# the program never started), never a silent change; --version, --help;
# the library refuses the same bad values from the environment (serving
# nothing, with a message); a --debug line about a passed-through
# descriptor names its file.
. "$(dirname "$0")/shim-lib.sh"

ran=$SHIM_TMP/ran
# bad ARGS...: wtio-run ARGS -- touch $ran must exit 2, say why, not run it
bad() {
	local err rc
	rm -f "$ran"
	err=$("$WTIO_RUN" --preload="$WTIO_PRELOAD" "$@" -- touch "$ran" 2>&1 >/dev/null)
	rc=$?
	[ $rc = 2 ] || fail "wtio-run $*: exit $rc, want 2 ($err)"
	[ -n "$err" ] || fail "wtio-run $*: no message"
	[ ! -e "$ran" ] || fail "wtio-run $*: the program ran anyway"
	echo "ok: $* -> 2: $(head -1 <<<"$err")"
}
good() {
	rm -f "$ran"
	"$WTIO_RUN" --preload="$WTIO_PRELOAD" "$@" -- touch "$ran" ||
		fail "wtio-run $*: exit $?"
	[ -e "$ran" ] || fail "wtio-run $*: the program did not run"
}

for v in abc -5M 10T 0 12Q 1.5G 64MX ""; do
	bad --cache-size="$v"
done
# larger than this machine's memory, whatever it has
mem_k=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
bad --cache-size=$((mem_k * 2))K
for v in 0 3k 5000 2M 64x abc ""; do
	bad --folio-size="$v"
done
# fewer than 16 folios: the budget and the folio size refused together
bad --cache-size=512K --folio-size=64k
WTIO_FOLIO_SIZE=3000 bad
WTIO_CACHE_SIZE=1M WTIO_FOLIO_SIZE=128k bad
bad --preload="$SHIM_TMP/no-such-lib.so"
bad --paths="$SHIM_TMP/no-such-dir"
bad --paths="$SERVED:$SHIM_TMP/no-such-dir"
touch "$SHIM_TMP/a-file"
bad --paths="$SHIM_TMP/a-file"
bad --paths=
bad --mode=bogus
bad --no-such-option
WTIO_CACHE_SIZE=abc bad
WTIO_MODE=bogus bad
WTIO_PATHS=$SHIM_TMP/no-such-dir bad
# the switches: a value neither on nor off is refused, never read as off
WTIO_LARGE_FOLIOS=no bad
WTIO_LARGE_FOLIOS=off bad
WTIO_DSYNC=yes bad
WTIO_DEBUG=true bad
WTIO_DISABLE=2 bad
WTIO_IO_CHANNEL=uring bad
rm -f "$ran"
"$WTIO_RUN" --preload="$WTIO_PRELOAD" 2>/dev/null
[ $? = 2 ] || fail "wtio-run without a program: not exit 2"

for v in 64M 512K 1G 1GiB 65536; do
	good --cache-size=$v
done
for v in 4k 64k 1M 65536; do
	good --folio-size=$v
done
good --cache-size=1M --folio-size=64k
WTIO_LARGE_FOLIOS=0 good
WTIO_LARGE_FOLIOS=1 good
WTIO_DSYNC= good
WTIO_IO_CHANNEL=aio good
WTIO_IO_CHANNEL=io_uring good
good --paths="$SERVED:$SHIM_TMP"
for m in writeback writethrough writethrough-noserial dontcache adaptive; do
	good --mode=$m
done

out=$("$WTIO_RUN" --version) || fail "--version: exit $?"
grep -Eq '^wtio-run [0-9]+\.[0-9]+' <<<"$out" || fail "--version printed '$out'"
echo "ok: --version: $out"
"$WTIO_RUN" --help | grep -q -- '--cache-size' || fail "--help"
echo "ok: --help"

# the library itself (LD_PRELOAD without wtio-run): a message, nothing served
out=$(WTIO_CACHE_SIZE=abc WTIO_PATHS=$SERVED WTIO_DEBUG=1 LD_PRELOAD=$WTIO_PRELOAD \
	dd if=/dev/zero of="$SERVED/x" bs=4k count=1 status=none 2>&1)
grep -q "WTIO_CACHE_SIZE=abc" <<<"$out" || fail "the library took WTIO_CACHE_SIZE=abc silently: $out"
! grep -q "served by wtio" <<<"$out" || fail "the library served with WTIO_CACHE_SIZE=abc"
echo "ok: the library refuses WTIO_CACHE_SIZE=abc"
out=$(WTIO_FOLIO_SIZE=3000 WTIO_PATHS=$SERVED WTIO_DEBUG=1 LD_PRELOAD=$WTIO_PRELOAD \
	dd if=/dev/zero of="$SERVED/x" bs=4k count=1 status=none 2>&1)
grep -q "WTIO_FOLIO_SIZE=3000" <<<"$out" || fail "the library took WTIO_FOLIO_SIZE=3000 silently: $out"
! grep -q "served by wtio" <<<"$out" || fail "the library served with WTIO_FOLIO_SIZE=3000"
out=$(WTIO_CACHE_SIZE=512K WTIO_FOLIO_SIZE=64k WTIO_PATHS=$SERVED WTIO_DEBUG=1 \
	LD_PRELOAD=$WTIO_PRELOAD dd if=/dev/zero of="$SERVED/x" bs=4k count=1 status=none 2>&1)
grep -q "fewer than 16 folios" <<<"$out" || fail "the library took 8 folios of 64k silently: $out"
! grep -q "served by wtio" <<<"$out" || fail "the library served 8 folios of 64k"
echo "ok: the library refuses WTIO_FOLIO_SIZE=3000 and 512K of 64k folios"
for kv in WTIO_LARGE_FOLIOS=no WTIO_DSYNC=yes WTIO_IO_CHANNEL=uring; do
	out=$(env "$kv" WTIO_PATHS=$SERVED WTIO_DEBUG=1 LD_PRELOAD=$WTIO_PRELOAD \
		dd if=/dev/zero of="$SERVED/x" bs=4k count=1 status=none 2>&1)
	grep -q "$kv: takes" <<<"$out" || fail "the library took $kv silently: $out"
	! grep -q "served by wtio" <<<"$out" || fail "the library served with $kv"
done
echo "ok: the library refuses WTIO_LARGE_FOLIOS=no, WTIO_DSYNC=yes, WTIO_IO_CHANNEL=uring"

# a debug line about a passed-through descriptor names the file
if [ -x "$SHIM_BIN/shim_raw" ]; then
	out=$(run writeback --debug -- "$SHIM_BIN/shim_raw" "$SERVED" unknown-ioctl 2>&1) ||
		fail "shim_raw unknown-ioctl: $out"
	grep -Eq "fd [0-9]+ \($SERVED/u\): .*passing the file through" <<<"$out" ||
		fail "the passthrough line does not name the file: $(grep passing <<<"$out")"
	echo "ok: $(grep -m1 passing <<<"$out")"
else
	skip "shim_raw not built: the debug-line check cannot run"
fi
exit 0
