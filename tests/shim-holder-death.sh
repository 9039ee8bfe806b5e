#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cache holder of `wtio-run --shared` SIGKILLed (issue #14): wtio-run,
# which outlives it, says which files had data it had not written back,
# and how much (from the record the holder kept in memory shared with
# wtio-run), and exits 125 when something was lost; when everything had
# been written back it says nothing was lost and returns the program's
# status; every served file is set to the size the program was last told
# (write-through leaves it up to a block longer until a sync or close),
# or, where a process of the program still has it open, that is said and
# the status is 125. With the program's first process gone before the holder (a
# process left behind), a watchdog says it in --log's file. Killed before
# it started the program: the program did not run, said, exit 125.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -x "$BIN" ] || skip "shared_matrix not built"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
READY=$SHIM_TMP/ready
ERR=$SHIM_TMP/err

# the holder's pid, from the socket name in READY ("@wtio-holder-PID-...")
holder_of() {
	sed -n 's/.*@wtio-holder-\([0-9]*\)-.*/\1/p' "$READY"
}

wait_ready() {	# LABEL
	local i
	for i in $(seq 200); do
		[ -s "$READY" ] && return 0
		sleep 0.05
	done
	fail "$1: the writer did not write its MiB in 10 s: $(cat "$ERR")"
}

# one LABEL MODE [fsync]: a writer write()s 1 MiB (then fsyncs) and
# pauses; the holder is SIGKILLed, then the writer. Sets RC.
one() {
	local label=$1 mode=$2 front wpid h
	rm -f "$READY" "$SERVED/data"
	srun "$mode" "$STATS" -- "$BIN" write-pause "$SERVED/data" "$READY" ${3:-} \
		2>"$ERR" &
	front=$!
	wait_ready "$label"
	read -r wpid _ <"$READY"
	h=$(holder_of)
	[ -n "$h" ] || fail "$label: no holder pid in $(cat "$READY")"
	kill -KILL "$h" || fail "$label: kill $h"
	sleep 0.5
	kill -KILL "$wpid" 2>/dev/null
	wait "$front"
	RC=$?
	grep -q "cache holder (pid $h) was killed by signal 9" "$ERR" ||
		fail "$label: wtio-run did not say the holder died: $(cat "$ERR")"
	grep -q "cache holder (pid $h) was killed by signal 9" "$STATS.log" ||
		fail "$label: not said in --log's file: $(cat "$STATS.log")"
}

one writeback writeback
n=$(sed -n "s|.*not written back, lost: $SERVED/data: at most \([0-9]*\) bytes.*|\1|p" "$ERR")
[ -n "$n" ] && [ "$n" -gt 0 ] ||
	fail "writeback: the report does not name $SERVED/data with its bytes: $(cat "$ERR")"
[ "$RC" = 125 ] || fail "writeback: exit status $RC, want 125 (data lost): $(cat "$ERR")"
echo "ok: writeback: the holder's death reported $SERVED/data, at most $n bytes lost; exit 125"

one writeback-fsync writeback fsync
grep -q "nothing was lost" "$ERR" ||
	fail "writeback, fsynced: the report does not say nothing was lost: $(cat "$ERR")"
grep -q "not written back, lost" "$ERR" &&
	fail "writeback, fsynced: a loss reported after an fsync: $(cat "$ERR")"
[ "$RC" = 137 ] || fail "writeback, fsynced: exit status $RC, want the program's 137"
echo "ok: writeback, everything fsynced: nothing lost, the program's status"

one writethrough writethrough
grep -q "nothing was lost" "$ERR" ||
	fail "writethrough: the report does not say nothing was lost: $(cat "$ERR")"
[ "$RC" = 137 ] || fail "writethrough: exit status $RC, want the program's 137"
echo "ok: writethrough: nothing lost, the program's status"

# Sizes: the holder writes whole blocks and makes a size exact at a sync
# or the last close, so at its death a write-through file was up to a
# block longer than the program was told (zeros past its last write),
# and "nothing was lost" was said of it. wtio-run now sets each file to
# the size the program was last told, once the program has let go.
cat >"$SHIM_TMP/sizes.py" <<'PYEOF'
import os, signal, sys, time
d, hold = sys.argv[1], sys.argv[2] == "hold"
def f(name):
    return os.open(os.path.join(d, name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
a = f("a"); os.write(a, b"0123456789")
b = f("b"); os.write(b, b"x" * 10000); os.fsync(b); os.write(b, b"y" * 10)
c = f("c"); os.write(c, b"z" * 10); os.fsync(c); os.ftruncate(c, 50000)
sizes = [os.fstat(x).st_size for x in (a, b, c)]
assert sizes == [10, 10010, 50000], sizes
if hold and os.fork() == 0:     # a process of the program keeps them open
    time.sleep(3)
    os._exit(0)
os.kill(int(os.environ["WTIO_HOLDER"].split("-")[2]), signal.SIGKILL)
time.sleep(0.3)
PYEOF
check_sizes() {	# LABEL
	"$PY" -c '
import os, sys
d = sys.argv[1]
want = {"a": b"0123456789", "b": b"x" * 10000 + b"y" * 10, "c": b"z" * 10 + bytes(49990)}
bad = [n for n, v in want.items() if open(os.path.join(d, n), "rb").read() != v]
sys.exit("files not as the program was told: %s (sizes %s)" % (bad, [os.stat(os.path.join(d, n)).st_size for n in "abc"]) if bad else 0)' "$SERVED" ||
		fail "$1: $(cat "$ERR")"
}
PY=$(command -v python3 || true)
if [ -n "$PY" ]; then
	for mode in writethrough writethrough-noserial; do
		rm -f "$SERVED"/*
		srun "$mode" "$STATS" -- "$PY" "$SHIM_TMP/sizes.py" "$SERVED" go 2>"$ERR"
		rc=$?
		[ $rc = 0 ] || fail "$mode sizes: exit status $rc, want the program's 0: $(cat "$ERR")"
		grep -q "nothing was lost" "$ERR" ||
			fail "$mode sizes: the report does not say nothing was lost: $(cat "$ERR")"
		grep -q "$SERVED/a: size set to 10 bytes" "$ERR" ||
			fail "$mode sizes: the size set back is not said: $(cat "$ERR")"
		check_sizes "$mode sizes"
		echo "ok: $mode: the holder killed after unsynced extending writes and an extension: every size as the program was told, said, exit 0"
	done
	# a process of the program still holds the files open: the size
	# cannot be set (the holder's lease lives on in its descriptors)
	rm -f "$SERVED"/*
	srun writethrough "$STATS" -- "$PY" "$SHIM_TMP/sizes.py" "$SERVED" hold 2>"$ERR"
	rc=$?
	[ $rc = 125 ] || fail "held sizes: exit status $rc, want 125 (a size left wrong): $(cat "$ERR")"
	grep -Eq "size not exact: $SERVED/a: [0-9]+ bytes where the program was told 10;" "$ERR" ||
		fail "held sizes: the wrong size is not said: $(cat "$ERR")"
	grep -q "nothing was lost" "$ERR" &&
		fail "held sizes: 'nothing was lost' said of a file left too long: $(cat "$ERR")"
	echo "ok: writethrough, the files still open in a process left behind: the sizes it could not set said, exit 125"
	sleep 3
fi

# A process left behind: wtio-run has returned; its watchdog says it.
rm -f "$READY" "$SERVED/data"
srun writeback "$STATS" -- sh -c '"$0" write-pause "$1" "$2" >/dev/null 2>&1 & exit 3' \
	"$BIN" "$SERVED/data" "$READY" 2>"$ERR"
rc=$?
[ $rc = 3 ] || fail "left behind: exit status $rc, want the program's 3"
wait_ready "left behind"
read -r wpid _ <"$READY"
h=$(holder_of)
kill -KILL "$h" || fail "left behind: kill $h"
for _ in $(seq 100); do
	grep -q "not written back, lost: $SERVED/data" "$STATS.log" && break
	sleep 0.1
done
kill -KILL "$wpid" 2>/dev/null
grep -q "not written back, lost: $SERVED/data: at most [1-9]" "$STATS.log" ||
	fail "left behind: the watchdog did not report the loss in --log's file: $(cat "$STATS.log")"
echo "ok: a process left behind: the watchdog reported the holder's death in --log's file"

# Killed before it started the program: the holder stops itself just
# before the program's go (wtio-run's WTIO_RUN_TEST_PAUSE_START), is
# SIGKILLed there; the program never runs, wtio-run says so and exits 125.
stopped_under() {	# PID: a stopped process below PID
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		if [ "$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' /proc/"$c"/status 2>/dev/null)" = T ]; then
			echo "$c"
			return
		fi
		stopped_under "$c"
	done
}
MARK=$SHIM_TMP/marker
rm -f "$MARK"
WTIO_RUN_TEST_PAUSE_START=1 srun writeback "$STATS" -- \
	sh -c 'touch "$0"; exit 3' "$MARK" 2>"$ERR" &
front=$!
h=
for _ in $(seq 200); do
	h=$(stopped_under "$front" | head -1)
	[ -n "$h" ] && break
	sleep 0.05
done
[ -n "$h" ] || fail "early: no stopped holder under wtio-run in 10 s: $(cat "$ERR")"
kill -KILL "$h" || fail "early: kill $h"
wait "$front"
rc=$?
[ ! -e "$MARK" ] || fail "early: the program ran although the holder died before its start"
[ "$rc" = 125 ] || fail "early: exit status $rc, want 125: $(cat "$ERR")"
grep -q "cache holder (pid $h) was killed by signal 9 before the program was started: the program did not run" "$ERR" ||
	fail "early: wtio-run did not say the program did not run: $(cat "$ERR")"
grep -q "the program did not run" "$STATS.log" ||
	fail "early: not said in --log's file: $(cat "$STATS.log")"
grep -q "fail with EIO from now on\|nothing was lost" "$ERR" &&
	fail "early: the messages describe a running program: $(cat "$ERR")"
echo "ok: the holder killed before the program's start: not run, said, exit 125"
# More files with unwritten data than the record names (1024 slots): the
# rest are counted together, and the summary counts each of them.
MANY=1100
rm -rf "$SERVED"/many
mkdir -p "$SERVED/many"
(ulimit -n 4096 2>/dev/null; srun writeback "$STATS" -- python3 -c '
import os, sys, time
hp = int(os.environ["WTIO_HOLDER"].split("-")[2])
fds = []
for i in range(int(sys.argv[2])):
    fd = os.open("%s/f%d" % (sys.argv[1], i), os.O_RDWR | os.O_CREAT, 0o644)
    os.write(fd, b"z" * 100)
    fds.append(fd)
os.kill(hp, 9)
time.sleep(1)
' "$SERVED/many" "$MANY" 2>"$ERR")
rc=$?
if grep -q "Too many open files" "$ERR"; then
	echo "info: cannot open $MANY files here (ulimit -n): the count is left out"
else
	[ "$rc" = 125 ] || fail "many files: exit status $rc, want 125: $(tail -3 "$ERR")"
	grep -q "more served files (not named)" "$ERR" ||
		fail "many files: no unnamed files counted: $(tail -3 "$ERR")"
	grep -q "lost: at most $((MANY * 100)) bytes in $MANY files" "$ERR" ||
		fail "many files: the summary is not $((MANY * 100)) bytes in $MANY files: $(tail -2 "$ERR")"
	echo "ok: $MANY files with unwritten data: all counted ($((MANY * 100)) bytes in $MANY files)"
fi
echo "PASS: shim-holder-death"
