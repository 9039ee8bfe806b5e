#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sqlite3 runs a write-heavy script (20k inserts in transactions, an index,
# updates, deletes, VACUUM) under wtio-run in each mode, rollback journal
# and WAL; PRAGMA integrity_check says ok, under the shim and after it.
. "$(dirname "$0")/shim-lib.sh"
command -v sqlite3 >/dev/null || skip "sqlite3 not installed (scripts/deps.sh)"

script() {	# journal mode
	echo "PRAGMA journal_mode=$1;"
	echo "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT);"
	echo "CREATE INDEX ta ON t(a);"
	for i in $(seq 1 20); do
		echo "BEGIN;"
		echo "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<1000)"
		echo "  INSERT INTO t(a,b) SELECT abs(random())%100000, hex(randomblob(40+$i)) FROM c;"
		echo "COMMIT;"
	done
	echo "BEGIN; DELETE FROM t WHERE a % 7 = 0; UPDATE t SET b = hex(randomblob(90)) WHERE a % 5 = 0; COMMIT;"
	echo "CREATE INDEX tb ON t(b);"
	echo "VACUUM;"
	echo "PRAGMA integrity_check;"
	echo "SELECT count(*) > 15000 FROM t;"
}

for mode in $MODES; do
	for jm in DELETE WAL; do
		db=$SERVED/test-$jm.db
		rm -f "$db" "$db"-*
		out=$(script $jm | run "$mode" -- sqlite3 "$db" 2>&1) ||
			{ echo "$out"; fail "sqlite3 ($mode, $jm)"; }
		[ "$(echo "$out" | tail -2 | tr '\n' ' ')" = "ok 1 " ] ||
			{ echo "$out"; fail "integrity under the shim ($mode, $jm)"; }
		out=$(sqlite3 "$db" "PRAGMA integrity_check; SELECT count(*) > 15000 FROM t;" 2>&1)
		[ "$(echo "$out" | tr '\n' ' ')" = "ok 1 " ] ||
			{ echo "$out"; fail "integrity after ($mode, $jm)"; }
		echo "ok: sqlite3, mode $mode, journal $jm"
	done
done
exit 0
