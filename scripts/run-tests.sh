#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# run-tests.sh - the project's one test command.
#
#   scripts/run-tests.sh [--quick]
#
# Passes:
#   plain  build/       default options, every test suite
#   asan   build-asan/  AddressSanitizer + UBSan, debug, every test suite
#   tsan   build-tsan/  ThreadSanitizer (clang), debug, suite 'concurrency'
#   fuzz   build-fuzz/  libFuzzer over the public API, WTIO_FUZZ_SECONDS (30)
#
# --quick (or WTIO_TEST_SANITIZERS=0) runs only the plain pass.
# Results are counted from each build's meson-logs/testlog.json; the last
# line printed is always "N passed, N failed, N skipped" over all passes.
# Exit status 1 when anything failed or a build broke, else 0.
set -uo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." || exit 1
ROOT=$(pwd)

quick=0
for arg in "$@"; do
	case "$arg" in
	--quick) quick=1 ;;
	-h|--help)
		sed -n '3,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "run-tests: unknown argument: $arg (try --help)" >&2
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
		;;
	esac
done
if [ "${WTIO_TEST_SANITIZERS:-1}" = 0 ]; then
	quick=1
fi

total_passed=0
total_failed=0
total_skipped=0
summary=()

note() { printf '\n=== run-tests: %s\n' "$*"; }

add_counts() {	# pass-name passed failed skipped
	total_passed=$((total_passed + $2))
	total_failed=$((total_failed + $3))
	total_skipped=$((total_skipped + $4))
	summary+=("$1: $2 passed, $3 failed, $4 skipped")
}

# Count one build's testlog.json. Prints the per-pass line and the names
# of failed and skipped tests; the last line is "P F S" for the caller.
count_log() {	# pass-name testlog.json
	python3 - "$1" "$2" <<'PYEOF'
import json, sys

name, path = sys.argv[1], sys.argv[2]
passed, failed, skipped = 0, [], []

def reason(entry, keys):
    out = entry.get("stdout") or ""
    if not isinstance(out, str):
        out = str(out)
    if entry.get("stderr"):
        out += "\n" + str(entry.get("stderr"))
    lines = [l.strip() for l in out.splitlines()
             if l.strip() and l.strip().strip("=-") != ""]
    for k in keys:
        for l in lines:
            if k in l:
                return l[:200]
    return lines[-1][:200] if lines else ""

SKIP_KEYS = ("SKIP", "skip", "Skip")
FAIL_KEYS = ("SUMMARY:", "ERROR", "FAIL", "WARNING:", "Assertion", "error")

try:
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            raw = raw.strip()
            if not raw:
                continue
            try:
                e = json.loads(raw)
            except ValueError:
                failed.append(("(unreadable testlog line)", ""))
                continue
            res = str(e.get("result", "")).upper()
            tname = e.get("name", "?")
            if res in ("OK", "EXPECTEDFAIL"):
                passed += 1
            elif res == "SKIP":
                skipped.append((tname, reason(e, SKIP_KEYS)))
            else:
                failed.append((tname + " [" + (res or "?") + "]", reason(e, FAIL_KEYS)))
except FileNotFoundError:
    pass

print("%s: %d passed, %d failed, %d skipped" % (name, passed, len(failed), len(skipped)))
for t, r in failed:
    print("  FAILED  %s%s" % (t, (": " + r) if r else ""))
for t, r in skipped:
    print("  skipped %s%s" % (t, (": " + r) if r else ""))
print("%d %d %d" % (passed, len(failed), len(skipped)))
PYEOF
}

# run_pass NAME BUILDDIR SUITE -- [env VAR=... for setup] -- [setup args]
# SUITE empty = every suite.
run_pass() {
	local name=$1 bdir=$2 suite=$3
	shift 3
	local setup_env=() setup_args=() in_env=1
	for a in "$@"; do
		if [ "$a" = "--" ]; then in_env=0; continue; fi
		if [ $in_env = 1 ]; then setup_env+=("$a"); else setup_args+=("$a"); fi
	done

	note "$name: configure $bdir"
	local reconf=()
	if [ -f "$bdir/meson-private/coredata.dat" ]; then
		reconf=(--reconfigure)
	fi
	if ! env "${setup_env[@]}" meson setup "${reconf[@]}" "$bdir" "${setup_args[@]}"; then
		echo "run-tests: $name: BUILD FAILED: 'meson setup $bdir' failed" >&2
		add_counts "$name" 0 1 0
		summary+=("  FAILED  $name build (meson setup)")
		return
	fi

	note "$name: build $bdir"
	if ! ninja -C "$bdir"; then
		echo "run-tests: $name: BUILD FAILED: 'ninja -C $bdir' failed" >&2
		add_counts "$name" 0 1 0
		summary+=("  FAILED  $name build (ninja)")
		return
	fi

	note "$name: test $bdir${suite:+ (suite $suite)}"
	local log="$bdir/meson-logs/testlog.json" out rc
	rm -f "$log"
	local targs=(-C "$bdir" --no-rebuild --print-errorlogs --num-processes 2)
	if [ -n "$suite" ]; then
		targs+=(--suite "$suite")
	fi
	out=$(mktemp)
	"${test_wrap[@]}" meson test "${targs[@]}" 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}

	local counts p f s
	if [ ! -s "$log" ] && grep -q "No suitable tests defined" "$out"; then
		echo "$name: no tests${suite:+ in suite '$suite'}"
		add_counts "$name" 0 0 0
		rm -f "$out"
		return
	fi
	rm -f "$out"
	counts=$(count_log "$name" "$log")
	read -r p f s <<<"$(tail -n 1 <<<"$counts")"
	if [ -z "${p:-}" ] || [ -z "${f:-}" ] || [ -z "${s:-}" ]; then
		echo "run-tests: $name: could not count results in $log" >&2
		p=0 f=1 s=0
		counts="$name: 0 passed, 1 failed, 0 skipped"$'\n'"  FAILED  (no results)"$'\n'
	fi
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "run-tests: $name: 'meson test' exited $rc with no failed test in $log" >&2
		f=1
		counts="$name: $p passed, $f failed, $s skipped"$'\n'"  FAILED  meson test (exit $rc)"$'\n'"$(sed '1d' <<<"$counts")"
	fi
	# Keep the detail lines (everything but the machine line) for the end.
	local body
	body=$(sed '$d' <<<"$counts")
	echo "$body"
	total_passed=$((total_passed + p))
	total_failed=$((total_failed + f))
	total_skipped=$((total_skipped + s))
	while IFS= read -r line; do
		summary+=("$line")
	done <<<"$body"
}

note "dependencies"
if ! "$ROOT/scripts/deps.sh"; then
	echo "run-tests: warning: scripts/deps.sh failed; trying with what is installed" >&2
fi

# The size-query tests count the kernel's file-time queries through a
# tracepoint: as root, make tracefs visible where the machine left it
# unmounted (they skip, with the reason, where it cannot be).
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing ] &&
   [ ! -e /sys/kernel/tracing/events ]; then
	if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then
		echo "run-tests: mounted tracefs on /sys/kernel/tracing"
	fi
fi

test_wrap=()
run_pass plain build "" --

if [ "$quick" = 0 ]; then
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	run_pass asan build-asan "" -- \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug
	unset ASAN_OPTIONS UBSAN_OPTIONS

	export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
	# ThreadSanitizer needs a memory layout that high mmap randomisation
	# (vm.mmap_rnd_bits > 28) breaks; run it without ASLR where possible.
	if setarch "$(uname -m)" -R true >/dev/null 2>&1; then
		test_wrap=(setarch "$(uname -m)" -R)
	fi
	run_pass tsan build-tsan concurrency CC=clang -- \
		-Db_sanitize=thread -Db_lundef=false -Dbuildtype=debug
	test_wrap=()
	unset TSAN_OPTIONS

	# A short, bounded libFuzzer run over the public API (issue #5);
	# scripts/fuzz.sh SECONDS runs a longer one.
	note "fuzz: ${WTIO_FUZZ_SECONDS:-30} s of fuzz/fuzz_api"
	if "$ROOT/scripts/fuzz.sh" "${WTIO_FUZZ_SECONDS:-30}"; then
		add_counts fuzz 1 0 0
	else
		add_counts fuzz 0 1 0
		summary+=("  FAILED  fuzz_api: a finding or a build failure (see build-fuzz/)")
	fi
fi

echo
echo "=== run-tests: summary"
for line in "${summary[@]}"; do
	echo "$line"
done
echo "$total_passed passed, $total_failed failed, $total_skipped skipped"
[ "$total_failed" -eq 0 ]
