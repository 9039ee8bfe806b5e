#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-memcg: equal memory. As root with a memory cgroup, the kernel
# modes run in a cgroup limited to wtio's cache + 64M + the I/O buffers,
# the JSON says so per result, and the cgroup is gone afterwards: after a
# normal end, after SIGINT mid-run and after SIGTERM mid-run (the test
# files too). --mem-limit=off and a non-root run say plainly that the
# comparison is not equal-memory.
# Usage: bench-memcg.sh PATH/TO/wtio-bench     exit 0 pass, 1 fail, 77 skip
set -u
B=${1:?usage: $0 wtio-bench}
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: not root (a memory cgroup needs root)"; exit 77; }
# This shell's memory cgroup: wtio-bench makes its own below it.
home=
if grep -q ' /sys/fs/cgroup/memory cgroup ' /proc/mounts; then
	rel=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup)
	home=/sys/fs/cgroup/memory${rel%/}
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	home=/sys/fs/cgroup${rel%/}
fi
[ -n "$home" ] && [ -d "$home" ] || { echo "SKIP: no memory cgroup controller"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-memcg.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
left() {	# PID: is anything of that run left behind?
	if [ -e "$home/wtio-bench.$1" ]; then
		echo "FAIL: $2: cgroup $home/wtio-bench.$1 left behind"; fail=1
		rmdir "$home/wtio-bench.$1" 2>/dev/null
	fi
	if ls "$dir" | grep -q "wtio-bench.$1"; then
		echo "FAIL: $2: files left: $(ls "$dir")"; fail=1
	fi
}

# 1. A normal run: limits per kernel result, none for wtio, cgroup gone.
"$B" --directory="$dir" --no-progress --output-format=json --rw=randwrite --bs=4k \
	--size=4M --io_size=1M --numjobs=1,2 --cache-size=64M --iodepth=1 \
	--modes=kernel-buffered,wtio-writeback >"$dir/r.json" 2>"$dir/err" &
pid=$!
wait $pid; rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: run exit $rc: $(cat "$dir/err")"; fail=1
else
	python3 - "$dir/r.json" <<'PYEOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
m = d["memory"]
bad = []
if m["cgroup"] not in ("v1", "v2") or not m["equal_memory"] or m["policy"] != "auto":
    bad.append("memory: %r" % m)
e = d["experiments"][0]
cache = e["wtio_cache_bytes"]
if cache != 64 << 20: bad.append("wtio_cache_bytes %d" % cache)
for r in e["results"]:
    want = cache + m["allowance_bytes"] + r["numjobs"] * 1 * 4096 if r["mode"].startswith("kernel") else None
    if r["mem_limit_bytes"] != want:
        bad.append("%s nj=%d: mem_limit_bytes %r, want %r" % (r["mode"], r["numjobs"], r["mem_limit_bytes"], want))
    if r["mode"].startswith("kernel") and not r["mem_peak_bytes"]:
        bad.append("%s: no mem_peak_bytes" % r["mode"])
if bad:
    print("FAIL: " + "; ".join(bad)); sys.exit(1)
PYEOF
fi
left $pid "normal end"

# 2. SIGINT and SIGTERM mid-run, while a kernel mode is inside the cgroup;
# and SIGINT twice at once, as timeout(1) sends it (to the child and to its
# process group): still one interruption, with its cleanup.
for sig in INT TERM INT2; do
	"$B" --directory="$dir" --no-progress --rw=randwrite --bs=4k --size=8M \
		--runtime=20 --time_based --modes=kernel-buffered,wtio-writeback \
		>"$dir/out" 2>"$dir/err" &
	pid=$!
	inside=0
	for _ in $(seq 100); do
		if [ -f "$home/wtio-bench.$pid/cgroup.procs" ] &&
		   grep -qx "$pid" "$home/wtio-bench.$pid/cgroup.procs" 2>/dev/null; then
			inside=1; break
		fi
		sleep 0.1
	done
	[ $inside = 1 ] || { echo "FAIL: SIG$sig: the kernel mode never entered its cgroup"; fail=1; }
	if [ $sig = INT2 ]; then kill -INT $pid; kill -INT $pid; else kill -$sig $pid; fi
	wait $pid; rc=$?
	[ $rc = 130 ] || { echo "FAIL: SIG$sig: exit $rc, want 130: $(tail -3 "$dir/err")"; fail=1; }
	grep -q interrupted "$dir/out" || { echo "FAIL: SIG$sig: no interrupted row"; fail=1; }
	left $pid "SIG$sig mid-run"
done

# 2b. --perf: perf is not the kernel mode's: it runs outside the cgroup. A
# stand-in perf notes its memory cgroup, writes its -o file and waits.
mkdir -p "$dir/bin"
cat >"$dir/bin/perf" <<'SHEOF'
#!/bin/sh
while [ $# -gt 1 ]; do [ "$1" = -o ] && out=$2; shift; done
grep memory /proc/self/cgroup | head -1 >"$PERF_CG_NOTE"
echo data >"$out"
trap 'exit 0' INT
while :; do sleep 0.05; done
SHEOF
chmod +x "$dir/bin/perf"
Babs=$(readlink -f "$B")	# the run is in $dir: perf's files go to the current directory
(cd "$dir" && PATH="$dir/bin:$PATH" PERF_CG_NOTE="$dir/perfcg" "$Babs" --directory="$dir" \
	--no-progress --perf --rw=randwrite --bs=4k --size=4M --io_size=1M \
	--modes=kernel-buffered >/dev/null 2>"$dir/err")
if grep -q "wtio-bench\." "$dir/perfcg" 2>/dev/null || [ ! -s "$dir/perfcg" ]; then
	echo "FAIL: --perf: perf ran in the kernel mode's cgroup (or not at all): $(cat "$dir/perfcg" "$dir/err" 2>&1)"
	fail=1
fi
rm -rf "$dir/bin" "$dir"/perf-*.data "$dir/perfcg"

# 3. --mem-limit=off: said plainly.
"$B" --directory="$dir" --no-progress --mem-limit=off --rw=randwrite --bs=4k --size=1M \
	--io_size=64k --modes=kernel-buffered >"$dir/out" 2>"$dir/err" ||
	{ echo "FAIL: --mem-limit=off run: $(cat "$dir/err")"; fail=1; }
grep -q "NOT an equal-memory comparison" "$dir/out" ||
	{ echo "FAIL: --mem-limit=off: the header does not say it"; fail=1; }
grep -q "not an equal-memory comparison" "$dir/err" ||
	{ echo "FAIL: --mem-limit=off: no note on stderr"; fail=1; }

# 4. Not root: said plainly (where we can drop root).
if command -v setpriv >/dev/null; then
	chmod 1777 "$dir"
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$B" --directory="$dir" \
		--no-progress --rw=randwrite --bs=4k --size=1M --io_size=64k \
		--modes=kernel-buffered 2>&1)
	if [ $? -eq 0 ]; then
		grep -q "not root" <<<"$out" ||
			{ echo "FAIL: a non-root run does not say it is not equal-memory"; fail=1; }
	else
		echo "note: could not run wtio-bench as nobody: $(tail -1 <<<"$out")"
	fi
fi

[ $fail = 0 ] && echo "PASS" && exit 0
exit 1
