#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shim's contract with the library (src/sys.h): libwtio calls none of
# the functions libwtio-preload.so defines by name, only through its system
# call table, so that inside the shim its calls never reach the
# interposers; the table is not exported; and the shim still serves a file
# with libwtio's own open and close going through it (one open of the
# file, served once, the data read back).
# usage: sys-calls.sh LIBWTIO_A LIBWTIO_SO [LIBWTIO_PRELOAD_SO WTIO_RUN]
set -u

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

ar_lib=$1 so_lib=$2 preload=${3:-} wtio_run=${4:-}
command -v nm >/dev/null || skip "nm (binutils) not installed"
[ -f "$ar_lib" ] || fail "$ar_lib missing"

# What the shim would interpose: every function libwtio-preload.so defines
# and exports. Without the shim built, the table's own entries stand in.
if [ -n "$preload" ] && [ -f "$preload" ]; then
	interposed=$(nm -D --defined-only "$preload" |
		     awk '$2 ~ /^[TtWi]$/ { sub(/@.*/, "", $3); print $3 }' | sort -u)
	for f in open close fstat pread pwritev2 ioctl syscall \
		 io_uring_queue_init_params; do
		echo "$interposed" | grep -qx "$f" || {
			[ "$f" = io_uring_queue_init_params ] && continue
			fail "the shim does not define $f: the list below would be empty"
		}
	done
else
	preload=
	interposed=$(nm -A -u "$ar_lib" | awk -F: '$2 ~ /(^|_)sys\.c\.o$/' |
		     awk '{ sub(/@.*/, "", $NF); print $NF }' | sort -u)
fi
[ -n "$interposed" ] || fail "no interposed names found"

# Every object of the archive but sys.c's (the table's libc defaults).
bad=$(nm -A -u "$ar_lib" |
      awk -F: '$2 !~ /(^|_)sys\.c\.o$/ { n = $NF; sub(/^ *U /, "", n);
					   sub(/@.*/, "", n); print $2, n }' |
      while read -r obj sym; do
	      echo "$interposed" | grep -qx "$sym" && echo "  $obj calls $sym"
      done)
if [ -n "$bad" ]; then
	echo "$bad"
	fail "libwtio calls functions the shim interposes directly; call them through src/sys.h (wtio_sys_*)"
fi
# The check sees calls at all: sys.c names libc's open and close.
nm -A -u "$ar_lib" | awk -F: '$2 ~ /(^|_)sys\.c\.o$/' | grep -qw 'close' ||
	fail "sys.c's calls not seen in $ar_lib: the check reads nothing"

# Internal: neither the library nor the shim exports the table.
for lib in "$so_lib" $preload; do
	exp=$(nm -D --defined-only "$lib" | grep -w 'wtio_sys_[a-z_]*')
	[ -z "$exp" ] || fail "$lib exports $exp"
done
echo "ok: no direct call of an interposed function, the table not exported"

[ -n "$preload" ] && [ -x "$wtio_run" ] || skip "shim not built: only the symbols checked"
case "${B_SANITIZE:-none}" in
none|"") ;;
*) skip "sanitizer build: the shim runs in the plain build (symbols checked)" ;;
esac
dir=$(mktemp -d "$PWD/sys-calls.XXXXXX") || fail mktemp
trap 'rm -rf "$dir"' EXIT
if ! dd if=/dev/zero of="$dir/.odirect" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	echo "ok (the served part skipped: $dir refuses O_DIRECT)"
	exit 0
fi
mkdir "$dir/served"
head -c 300000 /dev/urandom > "$dir/src"
# dd opens its output once: the shim must serve it once, libwtio's own
# open of it (the handoff) must not look like a second open
log=$("$wtio_run" --preload="$preload" --paths="$dir/served" --debug -- \
	dd if="$dir/src" of="$dir/served/dst" bs=7000 status=none 2>&1) ||
	fail "dd under the shim failed: $log"
n=$(echo "$log" | grep -c 'served by wtio')
[ "$n" = 1 ] || fail "expected one served open, saw $n: $log"
echo "$log" | grep -q 'open twice' && fail "libwtio's open seen as the program's: $log"
echo "$log" | grep -q 'uses io_uring' && fail "libwtio's rings seen as the program's: $log"
cmp "$dir/src" "$dir/served/dst" || fail "data differs after the shim's write-back"
echo "ok: served once, data read back"
exit 0
