#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# readme-example.sh SRCDIR LIBWTIO_A - the README's C example works as the
# README says: its ```c block is built with the README's own build-tree
# command (cc demo.c -Iinclude build/src/libwtio.a ...), run from a
# temporary directory (under the current one, which must take O_DIRECT),
# and must print HELLO and leave demo.dat holding what it wrote.
# The build's compiler stands for "cc" (CC, from meson), its sanitizer
# flags are added (B_SANITIZE), and -luring is dropped when the build has
# no liburing (WITH_URING=0).
# Exit 0 pass, 1 fail, 77 without a compiler or in a -Dfuzz=true build.
set -uo pipefail

src=${1:?usage: readme-example.sh SRCDIR LIBWTIO_A}
lib=${2:?usage: readme-example.sh SRCDIR LIBWTIO_A}
readme=$src/README.md
cc=${CC:-cc}

if [ "${FUZZ:-0}" = 1 ]; then
	echo "readme-example: SKIP: a -Dfuzz=true library links only with libFuzzer"
	exit 77
fi
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "readme-example: SKIP: no compiler $cc"
	exit 77
fi

tmp=$(mktemp -d "$PWD/readme-example.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

perl -ne 'if (/^```c\s*$/) { $in = 1; next } if ($in && /^```/) { exit } print if $in' \
	"$readme" > "$tmp/demo.c"
if ! grep -q 'int main' "$tmp/demo.c"; then
	echo "readme-example: FAIL: no \`\`\`c block with a main() in README.md"
	exit 1
fi
cmd=$(perl -ne 'print "$1\n" and exit if /`(cc demo\.c -Iinclude build\/src\/libwtio\.a[^`]*)`/' "$readme")
if [ -z "$cmd" ]; then
	echo "readme-example: FAIL: README.md has no \`cc demo.c -Iinclude build/src/libwtio.a ...\` command"
	exit 1
fi

# The README's paths, relative to a source tree with its build in build/.
ln -s "$src/include" "$tmp/include"
mkdir -p "$tmp/build/src"
ln -s "$lib" "$tmp/build/src/libwtio.a"
run=${cmd#cc }
if [ "${WITH_URING:-1}" = 0 ]; then
	run=${run//-luring/}
fi
extra=()
if [ -n "${B_SANITIZE:-}" ] && [ "$B_SANITIZE" != none ]; then
	extra=("-fsanitize=$B_SANITIZE")
fi
echo "readme-example: $cmd"
# shellcheck disable=SC2086	# the README's command, split as a shell would
if ! (cd "$tmp" && "$cc" $run "${extra[@]}" -o demo); then
	echo "readme-example: FAIL: the README's build command failed"
	exit 1
fi
out=$(cd "$tmp" && ./demo)
rc=$?
if [ "$rc" != 0 ] || [ "$out" != HELLO ]; then
	echo "readme-example: FAIL: the example exited $rc, printed '$out' (want 0, 'HELLO')"
	exit 1
fi
size=$(stat -c %s "$tmp/demo.dat")
head=$(head -c 5 "$tmp/demo.dat")
tail=$(tail -c +4097 "$tmp/demo.dat")
if [ "$size" != 4101 ] || [ "$head" != hello ] || [ "$tail" != HELLO ]; then
	echo "readme-example: FAIL: demo.dat is $size bytes, '$head' at 0, '$tail' at 4096 (want 4101, hello, HELLO)"
	exit 1
fi
echo "readme-example: the README's example printed HELLO; demo.dat holds hello at 0 and HELLO at 4096"
