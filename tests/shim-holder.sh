#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# shim-holder.sh - the cache holder of `wtio-run --shared` on its own: its
# protocol client (holder/holder_client.c, no shim: --preload is an empty
# library) in write-back and write-through, the files it left open
# written back when the program ends, the holder's counters and log, and
# wtio-run's exit status and lifetime with --shared.
# Environment from tests/meson.build: WTIO_RUN, SHIM_BIN, B_SANITIZE.
# Exit 0 pass, 1 fail, 77 skip.
set -u

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ -x "${WTIO_RUN:-}" ] || skip "wtio-run not built"
CLIENT=$SHIM_BIN/holder_client
NOP=$SHIM_BIN/libholder_nop.so
[ -x "$CLIENT" ] || skip "holder_client not built"
[ -f "$NOP" ] || skip "libholder_nop.so not built"
case "${B_SANITIZE:-none}" in
none|"") ;;
*) export ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 ;;
esac

T=$(mktemp -d "${SHIM_TMPDIR:-$PWD}/holder-test.XXXXXX") || fail "mktemp"
trap 'rm -rf "$T"' EXIT
if ! dd if=/dev/zero of="$T/.odirect" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	skip "the filesystem of $T refuses O_DIRECT"
fi
rm -f "$T/.odirect"

shared() {	# DIR [OPTIONS] -- PROGRAM...
	local d=$1
	shift
	timeout 120 "$WTIO_RUN" --shared --preload="$NOP" --paths="$d" \
		--cache-size=64M "$@"
}

stat_of() {	# FILE NAME
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

for mode in writeback writethrough; do
	d=$T/$mode
	mkdir "$d"
	WTIO_HOLDER_STATS=$T/$mode.stats shared "$d" --mode=$mode --debug \
		--log="$T/$mode.log" -- "$CLIENT" "$d" ||
		fail "$mode: holder_client failed (log: $(tail -5 "$T/$mode.log"))"
	# wtio-run returned after the holder's end: the stats are written
	[ -s "$T/$mode.stats" ] || fail "$mode: no stats file at wtio-run's return"
	for f in kept data; do
		cmp -s "$d/$f" "$d/$f.expect" ||
			fail "$mode: $f (left open) differs after the program's end"
	done
	served=$(stat_of "$T/$mode.stats" opens_served)
	lease=$(stat_of "$T/$mode.stats" demoted_lease)
	[ "${served:-0}" -ge 10 ] || fail "$mode: opens_served=$served"
	[ "${lease:-0}" -ge 1 ] || fail "$mode: demoted_lease=$lease"
	grep -q "served (flags" "$T/$mode.log" || fail "$mode: --debug said nothing in --log's file"
	if grep -q "write-back failed" "$T/$mode.log"; then
		fail "$mode: $(grep "write-back failed" "$T/$mode.log")"
	fi
done

# wtio-run's exit status is the program's
shared "$T" -- sh -c 'exit 3'
[ $? = 3 ] || fail "exit status 3 not passed on"
shared "$T" -- sh -c 'kill -TERM $$'
[ $? = 143 ] || fail "a program killed by SIGTERM: not reported as such"
shared "$T" -- /nonexistent/program 2>/dev/null
[ $? = 127 ] || fail "a missing program: not 127"
"$WTIO_RUN" --log="$T/x.log" -- true 2>/dev/null
[ $? = 2 ] || fail "--log without --shared accepted"
"$WTIO_RUN" --shared --log= -- true 2>/dev/null
[ $? = 2 ] || fail "--log= accepted"

# wtio-run itself leaks nothing (the LD_PRELOAD string it built was left
# at a --shared run's exit): in a sanitizer build LeakSanitizer looks at
# its exit, with and without an LD_PRELOAD of the caller's, and when the
# program is missing.
case "${B_SANITIZE:-none}" in
*address*)
	for how in shared shared-ld missing; do
		case $how in
		shared) cmd=(shared "$T" -- true) ;;
		shared-ld) cmd=(env LD_PRELOAD="$NOP" "$WTIO_RUN" --shared \
				--preload="$NOP" --paths="$T" -- true) ;;
		missing) cmd=("$WTIO_RUN" --preload="$NOP" --paths="$T" -- \
			      /nonexistent/program) ;;
		esac
		ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1 \
			"${cmd[@]}" >"$T/leak.out" 2>&1
		rc=$?
		if grep -q "LeakSanitizer" "$T/leak.out"; then
			fail "wtio-run ($how) leaks: $(grep -A4 'leak of' "$T/leak.out" | head -8)"
		fi
		[ $rc = 0 ] || [ $how = missing ] ||
			fail "wtio-run ($how) under the leak check: exit $rc: $(tail -3 "$T/leak.out")"
	done
	echo "ok: wtio-run leaks nothing (LeakSanitizer)"
	;;
esac

# Signals to wtio-run's pid reach the program: kill(2)'s are passed on,
# and a SIGKILL of wtio-run kills the program (as without --shared, where
# wtio-run execs it).
gone() {	# PID: wait until it has exited
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
for sig in TERM KILL; do
	rm -f "$T/prog.pid"
	# (no function, no timeout: $! must be wtio-run's pid)
	"$WTIO_RUN" --shared --preload="$NOP" --paths="$T" --cache-size=64M -- \
		sh -c 'echo $$ > "$0/prog.pid"; exec sleep 60' "$T" &
	front=$!
	for _ in $(seq 100); do
		[ -s "$T/prog.pid" ] && break
		sleep 0.1
	done
	prog=$(cat "$T/prog.pid" 2>/dev/null)
	[ -n "$prog" ] || fail "SIG$sig: the program did not start"
	kill -$sig $front
	wait $front 2>/dev/null
	st=$?
	gone "$prog" || fail "SIG$sig to wtio-run: the program $prog lives on"
	[ $sig = KILL ] || [ $st = 143 ] || fail "SIGTERM to wtio-run: status $st, not the program's 143"
done

# The holder killed: wtio-run still waits for the program, and returns
# its status.
rm -f "$T/prog.pid"
"$WTIO_RUN" --shared --preload="$NOP" --paths="$T" --cache-size=64M -- \
	sh -c 'echo $$ > "$0/prog.pid"; sleep 2; exit 7' "$T" 2>/dev/null &
front=$!
for _ in $(seq 100); do
	[ -s "$T/prog.pid" ] && break
	sleep 0.1
done
holder=$(ps -o pid= --ppid $front | head -1)
[ -n "$holder" ] || fail "no holder under wtio-run $front"
kill -9 $holder
wait $front
[ $? = 7 ] || fail "the holder killed: wtio-run did not return the program's 7"

# A process left behind: wtio-run returns with the program's status, the
# holder lives on until that process ends, then writes its counters.
WTIO_HOLDER_STATS=$T/daemon.stats shared "$T" --log="$T/daemon.log" -- \
	sh -c '(sleep 4; echo late > "$0/daemon.out") >/dev/null 2>&1 & exit 5' "$T"
[ $? = 5 ] || fail "with a process left behind: status not 5"
[ -e "$T/daemon.out" ] && fail "wtio-run waited for the process left behind"
for _ in $(seq 300); do
	[ -s "$T/daemon.stats" ] && break
	sleep 0.1
done
[ -s "$T/daemon.stats" ] || fail "the holder did not end after the last process"
[ -e "$T/daemon.out" ] || fail "the holder ended before the process left behind"
echo "PASS: shim-holder"
exit 0
