#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# pgbench TPS for docs/SHIM.md's figures (issue #14), not a registered
# test: run it under `flock /work/bench.lock` or on a quiet machine.
#   shim-pg-tps.sh bare|per-process|shared
# PostgreSQL 15 (shared_buffers 128MB, the default, in every run) on the
# scratch XFS image of shim-pg-lib.sh, the server in a memory cgroup of
# PG_MEMCG (448M: wtio's 256M cache + shared_buffers + 64M), so that the
# kernel's page cache has the memory wtio's cache has (the image's own
# memory is allocated first, outside it):
#   bare         no shim;
#   per-process  wtio-run --mode=writeback, a cache per process of
#                PG_PP_CACHE (16M: they are prefaulted, a dozen processes);
#   shared       wtio-run --shared --mode=writeback --cache-size=256M.
# pgbench -i -s PG_SCALE (10), then PG_RUNS (3) runs of pgbench -n -c 4
# -j 2 -T PG_SECONDS (30) on the same database; prints each run's tps and
# their median; the row count is checked after the last run.
PG_FALLOCATE=1
. "$(dirname "$0")/shim-pg-lib.sh"
RUNS=${PG_RUNS:-3}
MEMCG_LIMIT=${PG_MEMCG:-448M}
PP_CACHE=${PG_PP_CACHE:-16M}
case $VARIANT in
bare|per-process|shared) ;;
*) fail "usage: shim-pg-tps.sh bare|per-process|shared" ;;
esac
own=$(sed -n 's/^[0-9]*:memory://p' /proc/self/cgroup)
CG=/sys/fs/cgroup/memory$own/wtio-pg-tps.$$
mkdir "$CG" 2>/dev/null || skip "no memory cgroup (v1) to make under $own"
echo "$MEMCG_LIMIT" >"$CG/memory.limit_in_bytes" || fail "memory.limit_in_bytes"
cleanup_tps() {
	if [ -n "$DATA" ] && [ -f "$DATA/postmaster.pid" ]; then
		runuser -u "$PGUSER_OS" -- "$PGBIN/pg_ctl" -D "$DATA" -m immediate \
			-w -t 30 stop >/dev/null 2>&1
	fi
	sleep 1
	cat "$CG/cgroup.procs" 2>/dev/null | xargs -r kill -9 2>/dev/null
	sleep 0.5
	rmdir "$CG" 2>/dev/null
	cleanup
}
trap cleanup_tps EXIT

# in_cg CMD...: CMD (and what it forks) in the memory cgroup
in_cg() {
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

start_tps() {
	local run=()
	case $VARIANT in
	per-process) run=("$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode=writeback
			  --paths="$DATA" --cache-size="$PP_CACHE" --) ;;
	shared) run=("$WTIO_RUN" --shared --log="$MNT/holder.log" --preload="$WTIO_PRELOAD"
		     --mode=writeback --paths="$DATA" --cache-size=256M --) ;;
	esac
	in_cg runuser -u "$PGUSER_OS" -- "${run[@]}" \
		"$PGBIN/pg_ctl" -D "$DATA" -l "$LOG.tps" -w -t 300 \
		-o "-p $PORT -k $SOCK -c listen_addresses=''" start >/dev/null 2>&1 ||
		fail "$VARIANT: start failed: $(tail -20 "$LOG.tps")"
	collect_server
}

new_database "$VARIANT" start_tps
all=()
for r in $(seq "$RUNS"); do
	pgbench_run "$VARIANT run $r" -n
	all+=("$TPS")
done
n=$(psql_q "SELECT count(*) FROM pgbench_accounts") || fail "count"
[ "$n" = $((SCALE * 100000)) ] || fail "pgbench_accounts has $n rows"
peak=$(($(cat "$CG/memory.max_usage_in_bytes") >> 20))
median=$(printf '%s\n' "${all[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
stop "$VARIANT"
echo "tps: $VARIANT: runs ${all[*]}; median $median (pgbench -n -c 4 -j 2 -T $SECS, scale $SCALE, memcg $MEMCG_LIMIT, peak ${peak} MiB)"
