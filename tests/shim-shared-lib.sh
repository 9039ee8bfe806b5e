# SPDX-License-Identifier: MIT
# Sourced after tests/shim-lib.sh by the tests of one cache per program
# (issue #14, `wtio-run --shared`): run a program under the holder, wait
# for the holder to exit (it outlives the program's first process), read
# its stats file (WTIO_HOLDER_STATS: "name value" lines).
# SHARED_FLAG= (empty) runs the same tests under the per-process shim, to
# show that they fail there; the holder's checks are then skipped.
SHARED_FLAG=${SHARED_FLAG---shared}
# the holder's stats of the last srun, and the fork/exec checker
STATS=$SHIM_TMP/stats
BIN=$SHIM_BIN/shared_matrix
if [ -n "$SHARED_FLAG" ]; then
	"$WTIO_RUN" --help 2>&1 | grep -q -- "$SHARED_FLAG" ||
		fail "wtio-run has no $SHARED_FLAG (issue #14 stage 1 not built)"
fi

# srun MODE STATS [wtio-run options] -- PROGRAM ARGS: one program under
# the holder; its stats go to STATS, its log (--log) to STATS.log.
srun() {
	local mode=$1 stats=$2
	shift 2
	rm -f "$stats" "$stats.log"
	if [ -z "$SHARED_FLAG" ]; then
		# the per-process shim's decisions, on stderr and in STATS.log
		{ timeout 300 "$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" \
			--paths="$SERVED" --cache-size=64M --debug "$@" 2>&1 1>&3 |
			tee -a "$stats.log" >&2; return "${PIPESTATUS[0]}"; } 3>&1
		return
	fi
	WTIO_HOLDER_STATS=$stats timeout 300 "$WTIO_RUN" $SHARED_FLAG \
		--log="$stats.log" --preload="$WTIO_PRELOAD" --mode="$mode" \
		--paths="$SERVED" --cache-size=64M "$@"
}

# wait_holder STATS: the holder writes STATS when it exits, after it has
# written every file back; wait for the whole file (its last counter).
wait_holder() {
	local i
	[ -n "$SHARED_FLAG" ] || return 0
	for i in $(seq 600); do
		grep -q '^dirty_lost_bytes ' "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "the holder did not exit (or wrote no stats) within 60 s of the program's end: $(ls -l "$1" 2>&1; tail -5 "$1.log" 2>/dev/null)"
}

# stat_of STATS NAME: one counter (empty if missing)
stat_of() {
	awk -v k="$2" '$1 == k { print $2 }' "$1"
}

# demotions STATS: every demotion, whatever its reason (the "demoted"
# line, else the sum of the demoted_REASON lines)
demotions() {
	awk '$1 == "demoted" { all = $2; have = 1 }
	     $1 ~ /^demoted_/ { s += $2 }
	     END { print have ? all : s + 0 }' "$1"
}

# served_at_least STATS N WHAT: the holder served N opens or more
served_at_least() {
	local n p
	if [ -z "$SHARED_FLAG" ]; then
		# the per-process shim: served, and never passed through?
		n=$(grep -c "served by wtio" "$1.log")
		p=$(grep -E "through from now on|lease broken|passing .* through" "$1.log" | head -3)
		[ "$n" -ge "$2" ] && [ -z "$p" ] ||
			fail "$3: the per-process shim served $n opens (want $2) and passed files through: $p"
		return 0
	fi
	n=$(stat_of "$1" opens_served)
	[ -n "$n" ] || fail "$3: no opens_served in the holder's stats: $(cat "$1")"
	[ "$n" -ge "$2" ] ||
		fail "$3: the holder served $n opens, want at least $2 (passed through?): $(tr '\n' ' ' <"$1")"
}
