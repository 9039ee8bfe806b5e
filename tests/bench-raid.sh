#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-raid: wtio-bench --raid runs the wtio modes on the user-space RAID
# (member I/O printed; none read with the array's geometry, where wtio
# aligns writeback to the stripe width, also with a width that does not
# divide the 1 MiB I/O cap; the RMW visible with one chunk per I/O, the
# old cut), skips the kernel modes with the reason, leaves no member
# file behind, refuses bad specs and combinations; --md-raid says plainly
# when the kernel has no md, and refuses --stripe; and
# bench/raid-stripe.sh prints its three rows.
# Usage: bench-raid.sh PATH/TO/wtio-bench PATH/TO/raid-stripe.sh
#        exit 0 pass, 1 fail, 77 skip
set -u
B=${1:?usage: $0 wtio-bench raid-stripe.sh}
S=${2:?usage: $0 wtio-bench raid-stripe.sh}
B=$(readlink -f "$B"); S=$(readlink -f "$S")
[ -w /dev/shm ] || { echo "SKIP: /dev/shm not writable"; exit 77; }
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

run() {	# name raid args...: one --raid run; its stderr in $tmp/name.err
	local name=$1 raid=$2; shift 2
	local rc
	"$B" --raid="$raid" --rw=write --bs="${BS:-64k}" --size="${SZ:-2M}" --runtime=0 \
		--cache-size=16M --no-progress --directory="$tmp" "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" &
	pids="$pids $!"	# member files are named by wtio-bench's pid
	wait $! && rc=0 || rc=$?
	if [ $rc != 0 ]; then
		echo "FAIL: $name: exit $rc"; cat "$tmp/$name.err"; fail=1
	fi
}
pids=
reads() { sed -n "s/^raid: $2: member reads \([0-9]*\).*/\1/p" "$tmp/$1.err"; }

run chunk 5,5,16k --raid-cut=chunk --modes=kernel-buffered,wtio-writeback
grep -q 'kernel-buffered.*unsupported: kernel modes cannot run on --raid' "$tmp/chunk.out" ||
	{ echo "FAIL: kernel mode not skipped with its reason"; cat "$tmp/chunk.out"; fail=1; }
r=$(reads chunk wtio-writeback)
[ -n "$r" ] && [ "$r" -gt 0 ] ||
	{ echo "FAIL: chunk-cut writeback: member reads '$r', want > 0"; fail=1; }
# A cache whose background threshold (10%) is above the file's 2 MiB: the
# flusher must not start while a 64 KiB write is half copied (a loaded
# machine made that a partial stripe); all write-back happens at close.
# 64 KiB stripes (4 data disks), then 48 KiB (3: not a divisor of 1 MiB;
# 43 of them in 48 KiB writes, so that the file ends on a stripe boundary).
for raid in 5,5,16k 5,4,16k; do
	sz=2M bs=64k; [ $raid = 5,4,16k ] && sz=2064k bs=48k
	for su in chunk stripe; do
		SZ=$sz BS=$bs run "width-$raid-$su" $raid --raid-su=$su --modes=wtio-writeback \
			--cache-size=64M
		r=$(reads "width-$raid-$su" wtio-writeback)
		[ "$r" = 0 ] || { echo "FAIL: --raid=$raid --raid-su=$su: member reads '$r', want 0"; fail=1; }
	done
done
# Only this test's runs: another program's wtio-bench may be running.
for p in $pids; do
	if ls /dev/shm/wtio-bench-raid.$p.* >/dev/null 2>&1; then
		echo "FAIL: member files left in /dev/shm:"; ls /dev/shm/wtio-bench-raid.$p.*; fail=1
	fi
done

for spec in 4,4,64k 5,2,64k 6,3,64k 5,4,3k 5,4,1k 5,4; do
	"$B" --dry-run --raid=$spec >/dev/null 2>"$tmp/bad.err"; rc=$?
	[ $rc = 2 ] && grep -q 'is not LEVEL,DISKS,CHUNK' "$tmp/bad.err" ||
		{ echo "FAIL: --raid=$spec: exit $rc"; cat "$tmp/bad.err"; fail=1; }
done
"$B" --dry-run --raid=5,4,64k --xfs-loop >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --raid with --xfs-loop accepted"; fail=1; }
"$B" --dry-run --raid-su=stripe >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --raid-su without --raid accepted"; fail=1; }
"$B" --dry-run --raid-cut=chunk >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --raid-cut without --raid accepted"; fail=1; }
"$B" --dry-run --raid=5,4,64k --raid-su=stripe --raid-cut=chunk >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: a width smaller than the unit accepted"; fail=1; }
"$B" --dry-run --md-raid=5,4,64k --stripe=64k,3 >/dev/null 2>"$tmp/mds.err"; rc=$?
[ $rc = 2 ] && grep -q "the stripe is the array's" "$tmp/mds.err" ||
	{ echo "FAIL: --md-raid with --stripe: exit $rc"; cat "$tmp/mds.err"; fail=1; }

if [ ! -e /proc/mdstat ] && [ ! -e /sys/module/md_mod ]; then
	"$B" --md-raid=6,8,64k --rw=write --size=1M --modes=wtio-writeback --no-progress \
		>/dev/null 2>"$tmp/md.err"; rc=$?
	[ $rc = 1 ] && grep -q 'this kernel has no md' "$tmp/md.err" ||
		{ echo "FAIL: --md-raid without md: exit $rc"; cat "$tmp/md.err"; fail=1; }
else
	echo "note: this kernel has md; --md-raid is not run here (it needs root and minutes)"
fi

SIZE=2M CACHE=16M RAID=5,5,16k DIR="$tmp" bash "$S" "$B" >"$tmp/exp.out" 2>&1 ||
	{ echo "FAIL: raid-stripe.sh exit $?"; cat "$tmp/exp.out"; fail=1; }
[ "$(grep -cE '^(aligned|cut at|not cut).* [0-9.]+ \[[0-9.]+-[0-9.]+\] +[0-9-]+ +[0-9-]+' \
	"$tmp/exp.out")" = 3 ] ||
	{ echo "FAIL: raid-stripe.sh rows"; cat "$tmp/exp.out"; fail=1; }

[ $fail = 0 ] && echo PASS
exit $fail
