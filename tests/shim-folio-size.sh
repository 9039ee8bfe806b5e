#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# wtio-run --folio-size and --no-large-folios: the size reaches the cache (the library's debug
# line, the holder's with --shared), and a program sees the same bytes
# with 64 KiB and 1 MiB folios as without the shim: a copy, and a mix of
# unaligned writes, overwrites inside one folio, holes, truncates down
# into a folio and up past it, reads back through the cache, in every
# mode. Its bad values are refused in shim-run-args.
. "$(dirname "$0")/shim-lib.sh"

PY=$(command -v python3 || true)

# The workload: SEED decides it; the same seed writes the same file.
mix() {		# mix FILE SEED
	"$PY" - "$1" "$2" <<'EOF'
import os, random, sys
path, seed = sys.argv[1], int(sys.argv[2])
r = random.Random(seed)
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
size = 0
for i in range(400):
    op = r.random()
    if op < 0.6:
        # up to 3 folios of 64 KiB, at any byte, often inside one folio
        off = r.randrange(0, 3 << 20)
        n = r.choice([1, 7, 511, 4096, 4097, 65535, 65536, 70000, 200000])
        os.pwrite(fd, bytes([r.randrange(256)]) * n, off)
        size = max(size, off + n)
    elif op < 0.75:
        size = r.randrange(0, 3 << 20)
        os.ftruncate(fd, size)
    elif op < 0.9:
        off = r.randrange(0, (3 << 20) + 4096)
        n = r.randrange(1, 300000)
        got = os.pread(fd, n, off)
        want = max(0, min(n, size - off))
        if len(got) != want:
            sys.exit("read %d at %d: %d bytes, want %d" % (n, off, len(got), want))
    else:
        os.fdatasync(fd)
os.close(fd)
EOF
}

# Where the preload's debug line says which folio size its cache got.
out=$(run writeback --folio-size=64k --debug -- \
	dd if=/dev/zero of="$SERVED/probe" bs=4k count=1 status=none 2>&1) ||
	fail "dd under --folio-size=64k: $out"
grep -q "folio 65536" <<<"$out" || fail "no 'folio 65536' in the debug output: $out"
grep -q "served by wtio" <<<"$out" || fail "nothing served under --folio-size=64k: $out"
echo "ok: --folio-size=64k reaches the cache"

head -c $((16 << 20)) /dev/urandom >"$SERVED/src" || fail "make the source"
for fs in 64k 1M; do
	for mode in writeback writethrough dontcache adaptive; do
		rm -f "$SERVED/dst"
		run "$mode" --folio-size=$fs -- cp --reflink=never "$SERVED/src" "$SERVED/dst" ||
			fail "cp ($mode, folio $fs): exit $?"
		cmp "$SERVED/src" "$SERVED/dst" || fail "cp ($mode, folio $fs): the copy differs"
		rm -f "$SERVED/dst"
		run "$mode" --folio-size=$fs -- dd if="$SERVED/src" of="$SERVED/dst" \
			bs=300k status=none || fail "dd ($mode, folio $fs): exit $?"
		cmp "$SERVED/src" "$SERVED/dst" || fail "dd ($mode, folio $fs): the copy differs"
	done
	echo "ok: cp and dd with $fs folios, every mode"
done

if [ -z "$PY" ]; then
	skip "python3 not installed: the mixed workload cannot run"
fi
# mix_checked SEED MODE WTIO-RUN-OPTIONS...: the mix under the shim must
# leave the bytes the same seed leaves without it ($SHIM_TMP/ref).
mix_checked() {
	local seed=$1 mode=$2 out
	shift 2
	rm -f "$SERVED/mix"
	out=$(run "$mode" "$@" -- bash -c \
		"$(declare -f mix); PY=$PY; mix '$SERVED/mix' $seed" 2>&1) ||
		fail "the mix ($mode $*, seed $seed): $out"
	cmp "$SHIM_TMP/ref" "$SERVED/mix" ||
		fail "the mix ($mode $*, seed $seed) differs from the kernel's"
	ran=$((ran + 1))
}

run writeback -- "$PY" -c 'import sys' || fail "python3 under the shim"
ran=0
for seed in 1 2 3; do
	mix "$SHIM_TMP/ref" $seed || fail "the mix without the shim (seed $seed)"
	for fs in 64k 1M; do
		for mode in writeback writethrough dontcache; do
			mix_checked $seed $mode --folio-size=$fs
		done
	done
done
echo "ok: $ran mixed runs, each the kernel's bytes"

# The default: 4K folios, large ones for a file whose cache is empty when
# an I/O of 64K or more starts (the mix's writes of 65536 to 200000 bytes
# after its truncates); and every file in 4K folios.
ran=0
for seed in 4 5; do
	mix "$SHIM_TMP/ref" $seed || fail "the mix without the shim (seed $seed)"
	for mode in writeback writethrough dontcache; do
		mix_checked $seed $mode
		mix_checked $seed $mode --no-large-folios
	done
done
echo "ok: $ran mixed runs with and without --no-large-folios, each the kernel's bytes"

# One cache per program: the holder gets the size too.
rm -f "$SERVED/mix"
log=$SHIM_TMP/holder.log
out=$("$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode=writeback --paths="$SERVED" \
	--cache-size=64M --folio-size=64k --shared --debug --log="$log" -- bash -c \
	"$(declare -f mix); PY=$PY; mix '$SERVED/mix' 7" 2>&1) ||
	fail "the mix under --shared --folio-size=64k: $out"
grep -q "the program's cache: .* folio 65536" "$log" ||
	fail "the holder's cache is not of 64k folios: $(grep "program's cache" "$log")"
mix "$SHIM_TMP/ref" 7 || fail "the mix without the shim (seed 7)"
cmp "$SHIM_TMP/ref" "$SERVED/mix" || fail "the mix under --shared (folio 64k) differs"
WTIO_FOLIO_SIZE=3000 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --paths="$SERVED" \
	--shared -- true 2>/dev/null && fail "--shared took WTIO_FOLIO_SIZE=3000"
echo "ok: --shared with 64k folios, the kernel's bytes"
exit 0
