#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sqlite3 with two processes on one WAL database, both under the shim, in
# every mode (issue #11): a writer commits one row per transaction and
# acknowledges each commit in a file outside the paths; a reader, with one
# long-lived connection and a fresh one now and then, checks while the
# writer runs that every acknowledged row is there (count >= the
# acknowledgement read before the query, ids 1..count without a gap).
# At the end both connections see every row and PRAGMA integrity_check
# is "ok", also without the shim.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
# the interpreter itself, not a wrapper script (pyenv) that costs seconds
PY=$("$PY" -c "import sys; print(sys.executable)") || skip "python3 does not run"
"$PY" -c "import sqlite3" 2>/dev/null || skip "python3 has no sqlite3 module"
ROWS=${SQLITE_ROWS:-1500}

srun() {
	local mode=$1
	shift
	timeout 300 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M "$@"
}

cat >"$SHIM_TMP/share.py" <<'PYEOF'
import os, sqlite3, sys, time
role, db, ack, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def acked():
    try:
        with open(ack) as f:
            return int(f.read() or 0)
    except (OSError, ValueError):
        return 0

def connect():
    c = sqlite3.connect(db, timeout=60, isolation_level=None)
    c.execute("PRAGMA busy_timeout = 60000")
    return c

def check(c, want, what):
    n, lo, hi = c.execute("SELECT count(*), min(id), max(id) FROM t").fetchone()
    if n < want or (n and (lo != 1 or hi != n)):
        print(f"FAIL: {what}: {n} rows (ids {lo}..{hi}), {want} acknowledged")
        sys.exit(1)
    return n

if role == "writer":
    c = connect()
    c.execute("PRAGMA journal_mode = WAL")
    c.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)")
    for i in range(1, rows + 1):
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO t VALUES (?, randomblob(300))", (i,))
        c.execute("COMMIT")
        tmp = ack + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(i))
        os.replace(tmp, ack)
    c.close()
    print(f"writer: {rows} rows committed")
else:
    while not os.path.exists(ack):
        time.sleep(0.01)
    c = connect()
    polls = 0
    while True:
        want = acked()
        check(c, want, "long-lived reader")
        polls += 1
        if polls % 10 == 0:
            f = connect()
            check(f, acked(), "fresh reader")
            f.close()
        if want >= rows:
            break
        time.sleep(0.005)
    n = check(c, rows, "reader at the end")
    ok = c.execute("PRAGMA integrity_check").fetchone()[0]
    if ok != "ok" or n != rows:
        print(f"FAIL: integrity_check {ok!r}, {n} rows")
        sys.exit(1)
    print(f"reader: {polls} checks, all {n} rows, integrity ok")
PYEOF

for mode in $MODES; do
	rm -f "$SERVED"/db* "$SHIM_TMP/ack"
	srun "$mode" -- "$PY" "$SHIM_TMP/share.py" writer "$SERVED/db" "$SHIM_TMP/ack" "$ROWS" &
	w=$!
	srun "$mode" -- "$PY" "$SHIM_TMP/share.py" reader "$SERVED/db" "$SHIM_TMP/ack" "$ROWS" &
	r=$!
	rw=0
	rr=0
	wait $w || rw=$?
	wait $r || rr=$?
	[ $rw = 0 ] && [ $rr = 0 ] || fail "$mode: writer exited $rw, reader $rr"
	# and without the shim
	out=$("$PY" -c "
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute('PRAGMA integrity_check').fetchone()[0], c.execute('SELECT count(*) FROM t').fetchone()[0])" "$SERVED/db") ||
		fail "$mode: check without the shim"
	[ "$out" = "ok $ROWS" ] || fail "$mode: without the shim: $out"
	echo "ok: $mode: two sqlite3 processes on one WAL database"
done
echo "PASS: sqlite3 WAL shared by two processes under the shim"
