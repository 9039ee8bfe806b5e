#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A process of a `wtio-run --shared` program that runs as another user
# (runuser, su, a daemon dropping root): the holder serves its own user
# only, so that process's opens are the kernel's, and it must work as it
# would without wtio-run: read a file, create one, and see what another
# process of the program wrote into the holder's cache and has not
# synced (its open breaks the holder's lease: the file is written back
# and passed through first). It got EIO for every open under --paths,
# even of files nobody served.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
[ "$(id -u)" = 0 ] || skip "needs root (to run a process as nobody)"
RUNUSER=$(command -v runuser || true)
[ -n "$RUNUSER" ] || skip "runuser not installed"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
id nobody >/dev/null 2>&1 || skip "no user nobody"
chmod 755 "$SHIM_TMP"
chmod 777 "$SERVED"
"$RUNUSER" -u nobody -- test -w "$SERVED" ||
	skip "nobody cannot reach $SERVED (a parent directory is closed)"

cat >"$SHIM_TMP/mixed.py" <<'PYEOF'
import os, subprocess, sys
d, runuser = sys.argv[1], sys.argv[2]
def as_nobody(*cmd):
    return subprocess.run([runuser, "-u", "nobody", "--"] + list(cmd),
                          capture_output=True, text=True)
# a file another process of the program has written and not synced
fd = os.open(os.path.join(d, "dirty"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"written by root, not synced\n")
r = as_nobody("cat", os.path.join(d, "dirty"))
assert r.returncode == 0 and r.stdout == "written by root, not synced\n", ("dirty", r)
# the writer goes on (its descriptor passed through) and nobody sees that too
os.write(fd, b"and more\n")
r = as_nobody("cat", os.path.join(d, "dirty"))
assert r.stdout == "written by root, not synced\nand more\n", ("more", r)
os.close(fd)
# a file made before the program, and a file made by nobody
r = as_nobody("cat", os.path.join(d, "pub"))
assert r.returncode == 0 and r.stdout == "hello\n", ("pub", r)
r = as_nobody("sh", "-c", 'echo made > "$0/new"; cat "$0/new"', d)
assert r.returncode == 0 and r.stdout == "made\n", ("new", r)
assert os.stat(os.path.join(d, "new")).st_uid != 0
# and a served file again from here, after it all
with open(os.path.join(d, "new"), "rb") as f:
    assert f.read() == b"made\n"
print("ok")
PYEOF

for mode in writeback writethrough; do
	rm -rf "${SERVED:?}"/*
	echo hello >"$SERVED/pub"
	chmod 644 "$SERVED/pub"
	out=$(srun "$mode" "$STATS" -- "$PY" "$SHIM_TMP/mixed.py" "$SERVED" "$RUNUSER" 2>&1) ||
		fail "$mode: $out"
	wait_holder "$STATS"
	served_at_least "$STATS" 2 "$mode: the root processes' opens"
	echo "ok: $mode: a process run as nobody reads, creates and sees the program's unsynced data; the holder's files demoted $(demotions "$STATS") times"
done
echo "PASS: a process of the program under another uid gets the kernel's files"
