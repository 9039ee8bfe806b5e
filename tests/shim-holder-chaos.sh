#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The cache holder of `wtio-run --shared` under churn: four writer
# processes (O_APPEND records to one file, logged once acknowledged to a
# file outside the paths; reads and writes of three other files; forks
# that write; fsyncs) are SIGKILLed one after another and replaced, for
# SECONDS, while a process outside the program reads the files now and
# then (breaking the holder's leases). After the program: no acknowledged
# record missing, none torn or twice, the holder's end reported no lost
# write-back, and wtio-run returned. Write-back and write-through.
. "$(dirname "$0")/shim-lib.sh"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
SECS=${HOLDER_CHAOS_SECONDS:-8}

cat >"$SHIM_TMP/chaos.py" <<'PYEOF'
import os, sys, random, struct, time, signal
d, logd = sys.argv[1], sys.argv[2]
T = float(sys.argv[3])
def worker(wid, seed):
    rnd = random.Random(seed)
    log = os.open("%s/log.%d.%d" % (logd, wid, seed), os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    fd = os.open(d + "/app", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
    rw = os.open(d + "/rw%d" % rnd.randrange(3), os.O_CREAT | os.O_RDWR, 0o644)
    i = 0
    while True:
        op = rnd.randrange(10)
        if op < 5:
            rec = struct.pack("<III", wid, seed, i) + bytes([wid & 255]) * 52
            os.write(fd, rec)
            os.write(log, struct.pack("<III", wid, seed, i))
            i += 1
        elif op < 8:
            off = rnd.randrange(256) * 4096
            os.pwrite(rw, bytes([rnd.randrange(256)]) * 4096, off)
            os.pread(rw, 4096, off)
        elif op == 8:
            pid = os.fork()
            if pid == 0:
                os.pwrite(rw, b"c" * 100, rnd.randrange(1 << 20))
                os._exit(0)
            os.waitpid(pid, 0)
        else:
            os.fsync(rw)
end = time.time() + T
kids = {}
seed = 0
while time.time() < end:
    while len(kids) < 4:
        seed += 1
        pid = os.fork()
        if pid == 0:
            worker(seed % 4, seed); os._exit(0)
        kids[pid] = seed
    time.sleep(random.random() * 0.3)
    victim = random.choice(list(kids))
    os.kill(victim, signal.SIGKILL); os.waitpid(victim, 0); del kids[victim]
    if random.random() < 0.2:
        # an outsider-like kernel open (breaks the lease)
        os.close(os.open(d + "/rw0", os.O_RDONLY | os.O_CREAT, 0o644))
for pid in kids:
    os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)
print("chaos done, %d workers" % seed)
PYEOF
cat >"$SHIM_TMP/check.py" <<'PYEOF'
import os, sys, struct, glob
d, logd = sys.argv[1], sys.argv[2]
data = open(d + "/app", "rb").read()
assert len(data) % 64 == 0, "size %d not whole records" % len(data)
have = set()
for k in range(0, len(data), 64):
    wid, seed, i = struct.unpack("<III", data[k:k+12])
    assert data[k+12:k+64] == bytes([wid & 255]) * 52, "torn record at %d" % k
    assert (wid, seed, i) not in have, "duplicate"
    have.add((wid, seed, i))
logged = 0
for f in glob.glob(logd + "/log.*"):
    b = open(f, "rb").read()
    for k in range(0, len(b) - len(b) % 12, 12):
        t = struct.unpack("<III", b[k:k+12]); logged += 1
        assert t in have, "acknowledged record lost: %r" % (t,)
print("check ok: %d records, %d acknowledged all present" % (len(have), logged))
PYEOF

for mode in writeback writethrough; do
	rm -rf "${SERVED:?}"/* "$SHIM_TMP/log"
	mkdir -p "$SHIM_TMP/log"
	stats=$SHIM_TMP/$mode.stats
	# the outsider: a kernel open of the files, now and then
	( for _ in $(seq $((SECS * 3))); do
		cat "$SERVED/rw0" "$SERVED/app" >/dev/null 2>&1
		sleep 0.3
	done ) &
	outsider=$!
	WTIO_HOLDER_STATS=$stats timeout $((SECS + 120)) "$WTIO_RUN" --shared \
		--preload="$WTIO_PRELOAD" --mode="$mode" --paths="$SERVED" \
		--cache-size=64M --log="$stats.log" -- \
		"$PY" "$SHIM_TMP/chaos.py" "$SERVED" "$SHIM_TMP/log" "$SECS" ||
		fail "$mode: the program failed: $(tail -3 "$stats.log")"
	wait $outsider
	[ -s "$stats" ] || fail "$mode: no holder stats at wtio-run's return"
	out=$("$PY" "$SHIM_TMP/check.py" "$SERVED" "$SHIM_TMP/log" 2>&1) ||
		fail "$mode: $out"
	lost=$(awk '$1 == "dirty_lost_bytes" { print $2 }' "$stats")
	died=$(awk '$1 == "clients_died" { print $2 }' "$stats")
	[ "$lost" = 0 ] || fail "$mode: the holder lost $lost bytes of write-back"
	[ "${died:-0}" -ge 1 ] || fail "$mode: no client death counted"
	echo "ok: $mode: $out; $died processes ended holding files"
done
echo "PASS: the holder under SIGKILLed writers and outside opens"
exit 0
