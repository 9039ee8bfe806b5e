#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-accounting: for each workload kind, the bytes and ops wtio-bench
# counts equal the bytes and ops it issued, equal ops x bs, and match what
# reached the files (their sizes) where that is determined.
# Usage: bench-accounting.sh PATH/TO/wtio-bench   exit 0 pass, 1 fail, 77 skip
set -u
B=${1:?usage: $0 wtio-bench}
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
dir=$(mktemp -d "${TMPDIR:-$PWD}/bench-acct.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0

# check NAME FILE_BYTES_RULE args...
#   rule: "eq"  file_bytes == bytes (files hold exactly what was written)
#         "size:N" file_bytes == N
#         "-"   no file check
check() {
	local name=$1 rule=$2; shift 2
	local out
	out=$("$B" --directory="$dir" --output-format=json --no-progress "$@" 2>"$dir/err")
	local rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: $name: exit $rc: $(cat "$dir/err")"; fail=1; return
	fi
	RULE=$rule NAME=$name python3 -c '
import json, os, sys
d = json.load(sys.stdin)
rule, name = os.environ["RULE"], os.environ["NAME"]
bad = []
for e in d["experiments"]:
    bs = e["job"]["bs"]
    for r in e["results"]:
        tag = "%s %s nj=%d" % (name, r["mode"], r["numjobs"])
        if r["status"] == "unsupported":
            print("note: %s unsupported (%s)" % (tag, r["reason"]))
            continue
        if r["status"] != "ok":
            bad.append("%s: status %s %s" % (tag, r["status"], r["reason"])); continue
        if r["ops"] == 0: bad.append(tag + ": no ops")
        if r["bytes"] != r["issued_bytes"] or r["ops"] != r["issued_ops"]:
            bad.append("%s: counted %d B/%d ops, issued %d B/%d ops" % (tag, r["bytes"], r["ops"], r["issued_bytes"], r["issued_ops"]))
        if r["bytes"] != r["ops"] * bs:
            bad.append("%s: bytes %d != ops %d x bs %d" % (tag, r["bytes"], r["ops"], bs))
        if r["read_bytes"] + r["write_bytes"] != r["bytes"] or r["read_ops"] + r["write_ops"] != r["ops"]:
            bad.append(tag + ": read+write != total")
        if r["errors"]: bad.append(tag + ": errors")
        if r["lat_us"]["count"] != r["ops"]: bad.append(tag + ": latency samples != ops")
        if rule == "eq" and r["file_bytes"] != r["bytes"]:
            bad.append("%s: files hold %d B, wrote %d B" % (tag, r["file_bytes"], r["bytes"]))
        if rule.startswith("size:") and r["file_bytes"] != int(rule[5:]) * r["numjobs"]:
            bad.append("%s: files hold %d B, want %s x numjobs" % (tag, r["file_bytes"], rule[5:]))
for b in bad: print("FAIL: " + b)
sys.exit(1 if bad else 0)
' <<<"$out" || fail=1
}

M=kernel-buffered,kernel-direct,wtio-writeback
# One job writes a 1 MiB file sequentially: 256 x 4k, the file is 1 MiB.
check seq-write eq --rw=write --bs=4k --size=1M --modes=$M,kernel-dontcache,kernel-sfr
# Two jobs, a file each: 2 x 1 MiB.
check per-job-write eq --rw=write --bs=4k --size=1M --numjobs=2 --per-job-files --modes=$M
# Extending writes by two jobs into one file: the file is what they wrote.
check append eq --rw=write --file_append --bs=4k --size=512k --numjobs=1,2 --modes=$M
# Random overwrites of a preallocated 2 MiB file keep its size.
check randwrite - --rw=randwrite --bs=4k --size=2M --io_size=1M --overwrite --per-job-files --numjobs=1 --modes=$M --sync=dsync --sync_file_range=8 --fsync=32
check randread - --rw=randread --bs=4k --size=2M --io_size=1M --numjobs=1,2 --modes=$M
check randrw - --rw=randrw --bs=4k --size=2M --io_size=1M --numjobs=2 --modes=$M
check seq-read - --rw=read --bs=16k --size=2M --modes=$M
# Async engines (libaio / io_uring, wtio_queue_*).
check aio-write eq --rw=write --bs=4k --size=1M --iodepth=8 --modes=$M
check uring-read - --rw=randread --bs=4k --size=2M --io_size=1M --iodepth=8 --ioengine=io_uring --modes=kernel-buffered,kernel-direct
# The null engine (no I/O) counts like the others, in every family.
check null - --rw=randrw --bs=4k --size=2M --io_size=1M --ioengine=null --numjobs=1,2 --modes=$M
# Small files: every created file holds bs bytes.
check create eq --rw=create --bs=4k --size=256k --numjobs=1,2 --modes=kernel-buffered,wtio-writeback
# Time based, with ramp: still counted == issued.
check timed - --rw=randwrite --bs=4k --size=4M --runtime=300ms --time_based --ramp_time=100ms --iodepth=4 --modes=$M

# Overwrites never change the file size (2 MiB per job).
check overwrite-size size:2097152 --rw=randwrite --bs=4k --size=2M --io_size=256k --overwrite --per-job-files --numjobs=1,2 --modes=$M

# Nothing left behind in the directory.
left=$(ls -A "$dir" | grep -v '^err$' || true)
[ -z "$left" ] || { echo "FAIL: files left behind: $left"; fail=1; }

[ $fail = 0 ] && echo "PASS" && exit 0
exit 1
