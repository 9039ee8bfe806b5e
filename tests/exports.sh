#!/bin/bash
# SPDX-License-Identifier: MIT
# exports.sh LIB MAP - libwtio.so exports exactly the global symbols of
# its version script, and none of them is test machinery (the fault
# backend, crash simulation and test hooks live in tests/lib, never in
# the shipped library).
set -u
lib=$1 map=$2
command -v nm >/dev/null || { echo "SKIP: no nm here"; exit 77; }

# The names between "global:" and "local:" (or the node's end) of every
# version node; comments and braces are not names.
want=$(sed 's,/\*.*\*/,,; /^\/\*/,/\*\//d' "$map" |
       sed -n '/global:/,/local:\|}/p' | grep -v 'global:\|local:\|[{}]' |
       tr -d ' \t;' | grep -v '^$' | sort -u)
# What the library exports: defined dynamic symbols, version suffix cut.
have=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' |
       grep -v '^WTIO_[0-9_.]*$' | sort -u)
[ -n "$have" ] || { echo "FAIL: nm -D found no symbol in $lib"; exit 1; }

fail=0
extra=$(comm -13 <(echo "$want") <(echo "$have"))
missing=$(comm -23 <(echo "$want") <(echo "$have"))
test_syms=$(echo "$have" | grep -Ei 'fault|crash|test|hook')
if [ -n "$extra" ]; then
	echo "FAIL: exported but not in $map:"; echo "$extra"; fail=1
fi
if [ -n "$missing" ]; then
	echo "FAIL: in $map but not exported:"; echo "$missing"; fail=1
fi
if [ -n "$test_syms" ]; then
	echo "FAIL: test symbols exported:"; echo "$test_syms"; fail=1
fi
[ $fail = 0 ] && echo "ok: $(echo "$have" | wc -l) symbols, as the map says, none for tests"

# A program built against 0.1 binds wtio_stats@WTIO_0.1, whose struct
# ended at atomic_writes (18 counters), one built against 0.2
# wtio_stats@WTIO_0.2 (19): those entries must write those and not one
# byte past them; the default one fills the whole 0.3 struct (20).
# (Not in a sanitizer build: its runtime must come first in a process,
# and python3 does not have it.)
if nm -D "$lib" | grep -q ' U __[at]san_\| U __ubsan_'; then
	echo "note: sanitizer build: the versioned wtio_stats entries not called here"
elif command -v python3 >/dev/null; then
	python3 - "$lib" <<'PYEOF' || fail=1
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
dl = ctypes.CDLL(None)
dl.dlvsym.restype = ctypes.c_void_p
dl.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
old = dl.dlvsym(lib._handle, b"wtio_stats", b"WTIO_0.1")
mid = dl.dlvsym(lib._handle, b"wtio_stats", b"WTIO_0.2")
new = dl.dlvsym(lib._handle, b"wtio_stats", b"WTIO_0.3")
if not old or not mid or not new:
    print("FAIL: wtio_stats@WTIO_0.1, @WTIO_0.2 or @WTIO_0.3 missing"); sys.exit(1)
cfg = (ctypes.c_uint64 * 64)()
lib.wtio_config_init(cfg)
cfg[0] = 1 << 20                      # cache_size: 1 MiB
ctx = ctypes.c_void_p()
ret = lib.wtio_ctx_create(cfg, ctypes.byref(ctx))
if ret:
    print("note: wtio_ctx_create %d here: the stats entries not called" % ret)
    sys.exit(0)
POISON = 0xa5a5a5a5a5a5a5a5
bad = 0
for name, ent, want in (("WTIO_0.1", old, 18), ("WTIO_0.2", mid, 19),
                        ("WTIO_0.3", new, 20)):
    buf = (ctypes.c_uint64 * 32)(*([POISON] * 32))
    if fn(ent)(ctx, buf):
        print("FAIL: wtio_stats@%s failed" % name); bad = 1; continue
    written = [i for i in range(32) if buf[i] != POISON]
    if written != list(range(want)):
        print("FAIL: wtio_stats@%s wrote words %s, want 0..%d" %
              (name, written, want - 1)); bad = 1
lib.wtio_ctx_destroy(ctx)
if not bad:
    print("ok: wtio_stats@WTIO_0.1 writes 0.1's 18 counters only, @WTIO_0.2 "
          "0.2's 19, @@WTIO_0.3 all 20")
sys.exit(bad)
PYEOF
fi
exit $fail
