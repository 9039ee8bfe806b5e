#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Record locks between the processes of one program under `wtio-run
# --shared` (issue #14): two processes increment a counter in a served
# file, each increment a read-modify-write between fcntl lock and unlock
# (every increment kept); two sqlite3 (Debian) writer processes insert
# into one database at once, in rollback-journal and WAL modes (every
# row there, PRAGMA integrity_check ok, with and without the shim). A
# locked file passes through before its first lock (docs/SHIM.md, Limits
# of --shared): the holder's counters show it, printed.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 not installed"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
PY=$("$PY" -c "import sys; print(sys.executable)") || skip "python3 does not run"
N=${SQLITE_ROWS:-300}
INCS=${LOCK_INCS:-300}

cat >"$SHIM_TMP/counter.py" <<'PYEOF'
import fcntl, os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR)
for _ in range(n):
    fcntl.lockf(fd, fcntl.LOCK_EX, 8, 0)
    v = struct.unpack("<Q", os.pread(fd, 8, 0))[0]
    os.pwrite(fd, struct.pack("<Q", v + 1), 0)
    fcntl.lockf(fd, fcntl.LOCK_UN, 8, 0)
os.close(fd)
PYEOF

# writer.sql ID: N transactions of one row each
for w in 1 2; do
	{
		echo ".timeout 60000"
		for i in $(seq "$N"); do
			echo "BEGIN IMMEDIATE; INSERT INTO t VALUES ($w, $i, randomblob(200)); COMMIT;"
		done
	} >"$SHIM_TMP/writer$w.sql"
done

for mode in ${ONLY_MODES:-writeback writethrough}; do
	# the counter
	rm -f "$SERVED"/*
	"$PY" -c "import sys; open(sys.argv[1], 'wb').write(bytes(8))" "$SERVED/counter"
	srun "$mode" "$STATS" -- sh -c \
		'"$0" "$1" "$2" "$3" & "$0" "$1" "$2" "$3"; s=$?; wait $! && exit $s' \
		"$PY" "$SHIM_TMP/counter.py" "$SERVED/counter" "$INCS" ||
		fail "$mode counter: a process failed: $(tail -5 "$STATS.log")"
	wait_holder "$STATS"
	v=$("$PY" -c "import struct, sys; print(struct.unpack('<Q', open(sys.argv[1], 'rb').read(8))[0])" "$SERVED/counter")
	[ "$v" = $((2 * INCS)) ] ||
		fail "$mode counter: $v, want $((2 * INCS)): increments lost between locks"
	echo "ok: $mode: fcntl-locked read-modify-write from two processes: $v increments kept (demoted_lock $(stat_of "$STATS" demoted_lock))"

	for jm in delete wal; do
		db=$SERVED/db.$jm
		rm -f "$db" "$db"-*
		sqlite3 "$db" "PRAGMA journal_mode=$jm; CREATE TABLE t (w INTEGER, i INTEGER, v BLOB, PRIMARY KEY (w, i));" >/dev/null ||
			fail "$mode $jm: create"
		srun "$mode" "$STATS" -- sh -c \
			'sqlite3 "$0" < "$1" & sqlite3 "$0" < "$2"; s=$?; wait $! && exit $s' \
			"$db" "$SHIM_TMP/writer1.sql" "$SHIM_TMP/writer2.sql" >"$SHIM_TMP/out" 2>&1 ||
			fail "$mode $jm: a writer failed: $(tail -5 "$SHIM_TMP/out")"
		wait_holder "$STATS"
		got=$(sqlite3 "$db" "SELECT count(*), count(DISTINCT w || '.' || i) FROM t; PRAGMA integrity_check;" | tr '\n' ' ')
		[ "$got" = "$((2 * N))|$((2 * N)) ok " ] ||
			fail "$mode $jm: '$got', want '$((2 * N))|$((2 * N)) ok' (rows, distinct rows, integrity)"
		echo "ok: $mode $jm: two sqlite3 writers, $((2 * N)) rows, integrity ok (opens served $(stat_of "$STATS" opens_served), demoted_lock $(stat_of "$STATS" demoted_lock))"
	done
done
echo "PASS: record locks and sqlite3 between the processes of one program"
