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
if [ -d build ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
ninja -C build >/dev/null
cd "$workdir"
bench="$here/build/tools/wtio-bench/wtio-bench"
if [ -x "$bench" ]; then
	if [ $# -eq 0 ]; then
		set -- --suite=default
	fi
	exec "$bench" "$@"
fi
exec "$here/build/bench/wtio-microbench" "$workdir" 256 3
