#!/bin/bash
# SPDX-License-Identifier: MIT
# exports.sh LIB MAP - libwtio.so exports exactly the global symbols of
# its version script, and none of them is test machinery (the fault
# backend, crash simulation and test hooks live in tests/lib, never in
# the shipped library).
set -u
lib=$1 map=$2
command -v nm >/dev/null || { echo "SKIP: no nm here"; exit 77; }

# What the map promises: the names between "global:" and "local:".
want=$(sed -n '/global:/,/local:/p' "$map" | grep -v 'global:\|local:' |
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
exit $fail
