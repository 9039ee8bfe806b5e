#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-options: wtio-bench accepts good options (--dry-run plans them) and
# refuses bad ones with a clear message and exit status 2.
# Usage: bench-options.sh PATH/TO/wtio-bench     exit 0 pass, 1 fail, 77 skip
set -u
B=${1:?usage: $0 wtio-bench}
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
fail=0

good() {	# args... : must exit 0
	local out
	if ! out=$("$B" --dry-run "$@" 2>&1); then
		echo "FAIL: exit $? for good options: $*"; echo "$out" | head -5; fail=1
	fi
}
bad() {		# pattern args... : must exit 2 and print pattern on stderr
	local pat=$1; shift
	local err rc
	err=$("$B" --dry-run "$@" 2>&1 >/dev/null); rc=$?
	if [ "$rc" -ne 2 ]; then
		echo "FAIL: exit $rc (want 2) for: $*"; fail=1
	elif ! grep -q -- "$pat" <<<"$err"; then
		echo "FAIL: message for '$*' lacks '$pat': $err"; fail=1
	fi
}

good
good --rw=randwrite --bs=16k --size=64M --numjobs=1,2,4 --iodepth=32 --sync=dsync --overwrite
good --rw=write --file_append --bs=4k --size=1M --modes=kernel-buffered,wtio-writethrough-noserial
good --rw=randrw --rwmixread=70 --runtime=500ms --time_based --ramp_time=1s
good --rw=randwrite --sync_file_range=wait_before,write:16 --fsync=0
good --rw=randwrite --sync_file_range=16 --per-job-files --nrfiles=4
good --filename_format='t.$jobnum.$filenum' --cache-size=64M --folio-size=16k --flushers=2
good --dirty-ratio=75 --dirty-background-ratio=60 --modes=wtio-writeback
good --dirty-ratio=5 --modes=wtio-writeback
good --ioengine=io_uring --iodepth=4
good --ioengine=null --modes=kernel-buffered,wtio-writeback
good --suite=table2 --numjobs=1 --runtime=1
good --modes=kernel-buffered,kernel-direct,kernel-dontcache,kernel-sfr,wtio-writeback,wtio-writethrough,wtio-writethrough-noserial,wtio-dontcache
for s in default table1 table2 table3 table4 sustained dontcache-stream smallfiles cached-read; do
	good --suite=$s
done
good --repeat=3 --mem-limit=off
good --repeat=1 --mem-limit=auto --perf
[ "$(id -u)" = 0 ] && good --mem-limit=512M
# A limit below a kernel mode's own allocations would get wtio-bench killed in the cgroup.
if [ "$(id -u)" = 0 ]; then
	bad "is below what job's kernel modes allocate at numjobs=1" --mem-limit=16M --bs=1M --iodepth=64
	bad "allocate at numjobs=256" --mem-limit=16M --numjobs=1,256
	good --mem-limit=16M --bs=1M --iodepth=64 --modes=wtio-writeback
fi
good --readwrite=randread
good --output-format=json,csv
good --output-format=normal,terse

bad "is not a block size" --bs=4q
bad "is not a block size" --bs=0
bad "is not one of write" --rw=append
bad "unknown option" --no-such-option
bad "needs a value" --rw
bad "unknown mode 'kernel-bogus'" --modes=kernel-buffered,kernel-bogus
bad "unknown suite" --suite=nope
bad "is not none or dsync" --sync=osync
bad "fio's '1' is O_SYNC" --sync=1
bad "fio's 'sync' is O_SYNC" --sync=sync
good --sync=0
bad "is not one of auto, psync, libaio, io_uring, null" --ioengine=spdk
bad "is not a number from 1 to 4096" --iodepth=0
bad "is not a number from 1 to 256" --numjobs=1,x
bad "has an empty entry" --numjobs=1,,2
bad "has an empty entry" --numjobs=1,
bad "has 2 twice" --numjobs=1,2,2
bad "is not a number from 1 to 64" --repeat=0
bad "is not auto, off or a size" --mem-limit=lots
bad "is not a time" --runtime=ten
bad "exclude each other" --overwrite --file_append --rw=write
bad "needs --rw=write" --file_append --rw=randwrite
bad "needs --runtime" --time_based
bad "smaller than --bs" --size=4k --bs=16k
bad "power of two" --folio-size=12k
bad "is not a number from 2 to 90" --dirty-ratio=95
bad "is not a number from 1 to 90" --dirty-background-ratio=0
bad "is not normal, json, csv or terse" --output-format=xml
bad "only 'wait_before,write:N'" --sync_file_range=write:16
bad "unexpected argument" stray
bad "need --xfs-loop" --stripe=64k,4
bad "is not SU,SW" --xfs-loop --stripe=64k
bad "not a writable directory" --directory=/nonexistent/dir
# Values strtoull/strtod would take but no user means: refused, not wrapped or defaulted.
bad "is not a size" "--size= -1"
bad "is not auto, off or a size" "--mem-limit= -1"
bad "is not a number from 1 to 4096" "--iodepth= 4"
bad "is not a time" --runtime=nan
bad "is not a time" --ramp_time=nan
bad "is not a time" --runtime=0x10
good --runtime=.5 --time_based
# Empty list entries, as --numjobs refuses them.
bad "has an empty entry" --modes=kernel-buffered,,wtio-writeback
bad "has an empty entry" --modes=wtio-writeback,
bad "has an empty entry" --output-format=json,,csv
# File names that cannot differ would make several files one.
bad "has no \$filenum" --filename_format=fixed --nrfiles=4
bad "has no \$jobnum" --filename_format='x.$filenum' --per-job-files --numjobs=2
good --filename_format=fixed
good --filename_format='x.$filenum' --per-job-files --numjobs=1 --nrfiles=2
# A flag given a value names the flag.
bad "option '--dry-run' takes no value" --dry-run=1
bad "option '--progress' takes no value" --progress=1
# A suite's presets with a bad override are refused too.
bad "exclude each other" --suite=table2 --file_append

# --bs against the target's direct I/O alignment, before the run.
err=$("$B" --dry-run --bs=3000 --size=3000k --modes=kernel-direct 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ]; then
	grep -q "direct I/O alignment" <<<"$err" || { echo "FAIL: --bs=3000 message: $err"; fail=1; }
elif [ $rc -ne 0 ]; then
	echo "FAIL: --bs=3000 with kernel-direct: exit $rc"; fail=1
else
	echo "note: this directory reports no direct I/O alignment; --bs check not exercised"
fi
good --bs=3000 --size=3000k --modes=kernel-buffered,wtio-writeback

# --json=FILE that cannot be written fails before the run, not after it.
err=$("$B" --no-progress --json=/nonexistent/dir/r.json --rw=write --bs=4k --size=4k \
	--modes=wtio-writeback --mem-limit=off 2>&1); rc=$?
if [ $rc -ne 2 ] || ! grep -q -- "--json: /nonexistent/dir/r.json" <<<"$err" ||
   grep -q "numjobs=" <<<"$err"; then
	echo "FAIL: --json to an unwritable path: exit $rc (want 2, before any mode): $err"; fail=1
fi

# A file that does not fit says so (a short write once said a stale ENOENT).
if [ "$(id -u)" = 0 ] && small=$(mktemp -d "${TMPDIR:-/tmp}/bench-full.XXXXXX"); then
	if mount -t tmpfs -o size=1536k tmpfs "$small" 2>/dev/null; then
		out=$("$B" --no-progress --directory="$small" --rw=randread --bs=4k --size=4M \
			--modes=kernel-buffered --mem-limit=off 2>&1)
		grep -q "prepare .*No space left on device" <<<"$out" ||
			{ echo "FAIL: a file larger than its filesystem: $out"; fail=1; }
		umount "$small"
	fi
	rmdir "$small"
fi

# --help and --list-* exit 0 and print something.
"$B" --help | grep -q -- "--sync_file_range" || { echo "FAIL: --help"; fail=1; }
"$B" --list-modes | grep -q "wtio-writethrough-noserial" || { echo "FAIL: --list-modes"; fail=1; }
"$B" --list-suites | grep -q "^table4:" || { echo "FAIL: --list-suites"; fail=1; }

# Options reach the plan: check a few in the JSON of a dry run.
"$B" --dry-run --output-format=json --rw=randwrite --bs=16k --numjobs=1,3 \
	--iodepth=8 --sync=dsync --sync_file_range=16 --modes=kernel-direct,wtio-writeback |
python3 -c '
import json, sys
j = json.load(sys.stdin)["experiments"][0]["job"]
want = {"rw": "randwrite", "bs": 16384, "numjobs": [1, 3], "iodepth": 8,
        "sync": "dsync", "sync_file_range": 16, "modes": ["kernel-direct", "wtio-writeback"]}
bad = {k: (j.get(k), v) for k, v in want.items() if j.get(k) != v}
sys.exit("job mismatch: %r" % bad if bad else 0)
' || { echo "FAIL: options not in the plan"; fail=1; }
# Command-line options override a suite preset.
"$B" --dry-run --output-format=json --suite=table2 --numjobs=2 --bs=8k |
python3 -c '
import json, sys
j = json.load(sys.stdin)["experiments"][0]["job"]
sys.exit(0 if j["numjobs"] == [2] and j["bs"] == 8192 and j["sync"] == "dsync" else "override: %r" % j)
' || { echo "FAIL: suite override"; fail=1; }

[ $fail = 0 ] && echo "PASS" && exit 0
exit 1
