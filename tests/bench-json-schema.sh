#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-json-schema: wtio-bench's JSON output parses and has every key
# docs/BENCHMARKS.md documents, with the right types; CSV has its header;
# an unsupported or interrupted run is a status, never a number.
# Usage: bench-json-schema.sh PATH/TO/wtio-bench  exit 0 pass, 1 fail, 77 skip
set -u
B=${1:?usage: $0 wtio-bench}
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-$PWD}/bench-json.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

"$B" --directory="$dir" --no-progress --output-format=json,csv \
	--output="$dir/out" --json="$dir/r.json" --repeat=2 \
	--rw=randwrite --bs=4k --size=1M --io_size=64k --samples \
	--modes=kernel-buffered,wtio-writeback,kernel-direct 2>"$dir/err" ||
	{ echo "FAIL: run: $(cat "$dir/err")"; exit 1; }
grep -q "^experiment,numjobs,mode,status,engine,mib_s," "$dir/out" ||
	{ echo "FAIL: CSV header missing"; exit 1; }

python3 - "$dir/r.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
errs = []
def need(obj, keys, where):
    for k, t in keys.items():
        if k not in obj:
            errs.append("%s: missing %s" % (where, k))
        elif t is not None and not isinstance(obj[k], t):
            errs.append("%s: %s is %s, want %s" % (where, k, type(obj[k]).__name__, t))
num = (int, float)
need(d, {"tool": str, "schema": int, "date": str, "cmdline": str, "suite": (str, type(None)),
         "interrupted": bool, "machine": dict, "memory": dict, "experiments": list}, "top")
need(d.get("machine", {}), {"nproc": int, "mem_gib": num, "kernel": str, "root": bool,
                            "libwtio": str, "xfs_loop": bool, "stripe": str, "commit": str}, "machine")
need(d.get("memory", {}), {"policy": str, "cgroup": (str, type(None)), "allowance_bytes": int,
                           "equal_memory": bool, "note": str}, "memory")
mem = d.get("memory", {})
if not mem.get("equal_memory") and not mem.get("note"):
    errs.append("memory: not equal-memory without a note saying why")
if d.get("tool") != "wtio-bench": errs.append("tool")
for e in d.get("experiments", []):
    need(e, {"name": str, "title": str, "directory": str, "filesystem": str,
             "caches_dropped": bool, "wtio_cache_bytes": int, "job": dict, "results": list,
             "reference": (dict, type(None))}, "experiment")
    need(e["job"], {"rw": str, "bs": int, "size": int, "io_size": int, "numjobs": list,
                    "iodepth": int, "ioengine": str, "runtime": num, "ramp_time": num,
                    "time_based": bool, "sync": str, "sync_file_range": int, "fsync": int,
                    "overwrite": bool, "file_append": bool, "per_job_files": bool,
                    "nrfiles": int, "rwmixread": int, "cache_size": int, "folio_size": int,
                    "large_folios": bool,
                    "flushers": int, "dirty_ratio": int, "dirty_background_ratio": int,
                    "invalidate": bool, "pre_read": bool, "repeat": int,
                    "modes": list}, "job")
    if len(e["results"]) != len(e["job"]["numjobs"]) * len(e["job"]["modes"]):
        errs.append("results: one per numjobs x mode")
    for r in e["results"]:
        w = "result %s" % r.get("mode")
        need(r, {"mode": str, "numjobs": int, "status": str, "reason": str,
                 "engine": (str, type(None)), "runtime_s": num, "bytes": int, "ops": int,
                 "issued_bytes": int, "issued_ops": int, "read_bytes": int, "read_ops": int,
                 "write_bytes": int, "write_ops": int, "errors": int, "syncs": int,
                 "mib_s": num, "iops": num, "delta_pct": (int, float, type(None)),
                 "cpu_s": num, "cpu_s_per_gib": num, "close_s": num, "file_bytes": int,
                 "lat_us": dict, "samples_mib_s": list, "read_mib_s": num, "write_mib_s": num,
                 "repeats": int, "runs_ok": int, "interrupted_runs": int,
                 "within_noise": (bool, type(None)), "cpu_bound": bool,
                 "mem_limit_bytes": (int, type(None)), "mem_peak_bytes": (int, type(None)),
                 "stripe": dict, "spread": dict, "runs": list}, w)
        rep = e["job"]["repeat"]
        if len(r.get("runs", [])) != rep:
            errs.append(w + ": %d runs, want --repeat=%d" % (len(r.get("runs", [])), rep))
        for x in r.get("runs", []):
            need(x, {"repeat": int, "order": int, "status": str, "mib_s": num, "iops": num,
                     "lat_p99_us": num, "cpu_s_per_gib": num,
                     "mem_peak_bytes": (int, type(None))}, w + " run")
        for k in ("mib_s", "iops", "read_mib_s", "write_mib_s", "lat_p50_us", "lat_p99_us",
                  "lat_p99_9_us", "cpu_s_per_gib"):
            sp = r.get("spread", {}).get(k, 0)
            if r.get("status") == "ok":
                if not isinstance(sp, dict) or not sp["min"] <= sp["median"] <= sp["max"]:
                    errs.append("%s: spread %s %r" % (w, k, sp))
            elif sp is not None and r.get("runs_ok") == 0:
                errs.append("%s: spread %s without runs" % (w, k))
        if r.get("status") == "ok" and abs(r["spread"]["mib_s"]["median"] - r["mib_s"]) > 0.01:
            errs.append(w + ": mib_s is not the median run's")
        need(r.get("lat_us", {}), {k: num for k in ("mean", "min", "p50", "p90", "p99", "p99_9", "max")}, w + " lat_us")
        if r.get("status") not in ("ok", "unsupported", "error", "interrupted", "not-run"):
            errs.append(w + ": status " + str(r.get("status")))
        if r.get("status") == "unsupported" and (r.get("ops") or r.get("mib_s")):
            errs.append(w + ": unsupported but has figures")
        if r.get("status") == "ok":
            l = r["lat_us"]
            if not (l["min"] <= l["p50"] <= l["p99"] <= l["p99_9"] <= l["max"] * 1.04 + 1):
                errs.append(w + ": percentiles out of order %r" % l)
        if r["mode"].startswith("wtio-") and r["status"] == "ok" and "wtio" not in r:
            errs.append(w + ": no wtio counters")
    # Repeats alternate the modes: A B A B per numjobs.
    for nj in e["job"]["numjobs"]:
        rs = [r for r in e["results"] if r["numjobs"] == nj]
        order = sorted((x["order"], r["mode"], x["repeat"]) for r in rs for x in r["runs"] if x["order"])
        want = [(m, k + 1) for k in range(e["job"]["repeat"]) for m in e["job"]["modes"]]
        if [(m, k) for _, m, k in order] != want:
            errs.append("numjobs %d: trials ran in the order %r, want %r" % (nj, order, want))
    first = e["results"][0]
    if first["delta_pct"] is not None: errs.append("first mode has a delta")
for x in errs: print("FAIL: " + x)
sys.exit(1 if errs else 0)
PYEOF
[ $? -eq 0 ] || exit 1

# A mode the tool cannot run here is "unsupported" with a reason, and the
# others still run (an engine that is not built, or a refused flag).
"$B" --directory="$dir" --no-progress --output-format=json --rw=write --bs=4k --size=64k \
	--modes=kernel-buffered,wtio-dontcache 2>/dev/null |
python3 -c '
import json, sys
rs = json.load(sys.stdin)["experiments"][0]["results"]
ok = rs[0]["status"] == "ok" and rs[1]["status"] in ("ok", "unsupported")
if rs[1]["status"] == "unsupported":
    ok = ok and rs[1]["reason"] and rs[1]["ops"] == 0 and rs[1]["mib_s"] == 0
sys.exit(0 if ok else "bad: %r" % rs)
' || { echo "FAIL: unsupported mode handling"; exit 1; }

# Interrupted: SIGINT mid-run still prints valid JSON, marks it, cleans up.
"$B" --directory="$dir" --no-progress --output-format=json --output="$dir/int.json" \
	--rw=randwrite --bs=4k --size=4M --runtime=20 --time_based \
	--modes=kernel-buffered,wtio-writeback 2>/dev/null &
pid=$!
sleep 2
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 130 ] || { echo "FAIL: interrupted run exited $rc, want 130"; exit 1; }
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["experiments"][0]["results"]
sys.exit(0 if d["interrupted"] and rs[0]["status"] == "interrupted" and rs[0]["ops"] > 0
         and rs[1]["status"] == "not-run" else "bad: %r" % [(r["status"], r["ops"]) for r in rs])
' "$dir/int.json" || { echo "FAIL: interrupted JSON"; exit 1; }
left=$(ls -A "$dir" | grep -v -e '^err$' -e '^out$' -e '\.json$' || true)
[ -z "$left" ] || { echo "FAIL: temp files left after SIGINT: $left"; exit 1; }
echo PASS
exit 0
