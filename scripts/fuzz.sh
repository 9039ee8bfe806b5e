#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# fuzz.sh [SECONDS] [CORPUS_DIR] - build the libFuzzer target fuzz/fuzz_api
# in build-fuzz/ (clang, -Dfuzz=true, ASan + UBSan over the whole library)
# and run it for SECONDS (default 60) with CORPUS_DIR (default
# build-fuzz/corpus). Exit status non-zero on any finding (crash-*/leak-*
# files are left in build-fuzz/). The target's scratch file lives in the
# build directory, which must allow O_DIRECT.
set -euo pipefail
cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
secs=${1:-60}
corpus=${2:-build-fuzz/corpus}
bdir=${WTIO_FUZZ_BUILD:-build-fuzz}
if [ ! -f "$bdir/meson-private/coredata.dat" ]; then
	CC=clang meson setup "$bdir" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debugoptimized -Dtests=false
fi
ninja -C "$bdir" fuzz/fuzz_api
mkdir -p "$corpus"
corpus=$(cd "$corpus" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
cd "$bdir"
exec ./fuzz/fuzz_api -max_total_time="$secs" -max_len=512 -timeout=20 \
	-print_final_stats=1 "$corpus"
