#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# bench.sh - the README's first command: install what is missing, build,
# and run wtio's main job, the benchmark, on a temporary file in the
# current directory (or the directory given with --directory=DIR).
#
#   scripts/bench.sh [wtio-bench options...]
#
# With no options it runs the default suite (wtio-bench --suite=default).
# If wtio-bench is not part of this build, it runs bench/wtio-microbench.
set -euo pipefail

here="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
workdir="$(pwd)"
"$here/scripts/deps.sh"
cd "$here"
# Say what is happening, and show meson's or the compiler's own words when
# the build fails (quiet when it works).
log=$(mktemp "${TMPDIR:-/tmp}/wtio-bench-build.XXXXXX")
trap 'rm -f "$log"' EXIT
echo "bench.sh: building wtio in $here/build ..." >&2
if [ -d build ]; then
	setup=(meson setup --reconfigure build)
else
	setup=(meson setup build)
fi
if ! "${setup[@]}" >"$log" 2>&1; then
	cat "$log" >&2
	echo "bench.sh: '${setup[*]}' failed (its output is above)" >&2
	exit 1
fi
if ! ninja -C build >"$log" 2>&1; then
	grep -v '^\[[0-9]*/[0-9]*\] ' "$log" >&2 || cat "$log" >&2
	echo "bench.sh: 'ninja -C build' failed (the compiler's messages are above)" >&2
	exit 1
fi
rm -f "$log"
echo "bench.sh: built; running the benchmark" >&2
cd "$workdir"
bench="$here/build/tools/wtio-bench/wtio-bench"
if [ -x "$bench" ]; then
	if [ $# -eq 0 ]; then
		set -- --suite=default
	fi
	exec "$bench" "$@"
fi
exec "$here/build/bench/wtio-microbench" "$workdir" 256 3
