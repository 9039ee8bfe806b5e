#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fork/exec matrix of one cache per program (issue #14): the checker
# tests/shared_matrix.c, under `wtio-run --shared` in every mode, in each
# of its roles:
#   overlap      parent, forked children (on the parent's descriptors and
#                on their own), an exec'd and a posix_spawn'ed child write
#                and read overlapping ranges of two files; every read sees
#                the latest acknowledged write (shadow under one lock);
#                sizes by fstat, stat and SEEK_END; a shell's cat reads the
#                program's dirty data; after the program the files equal
#                the shadow (written back, exact size)
#   position     fork and dup share the position and the flags (F_SETFL
#                O_APPEND), a new open has its own
#   append       4 processes (a fork sharing the description, a fork and
#                an exec'd child with their own) append with O_APPEND:
#                nothing lost, nothing overlapped, in the program and on
#                disk after it
#   kill         a forked and an exec'd writer SIGKILLed: every record it
#                was acknowledged reads back in the program and is on disk
#                after it
#   execinherit  a descriptor inherited through exec is handed to the
#                kernel at its position, shared with the new image
#   misc         tests/shared_misc.c: dup2, F_DUPFD, close_range; another
#                process's O_TRUNC open and truncate(path) over dirty
#                data; mmap, flock and copy_file_range passing the file
#                through for every process with its data; record locks
#   holderkill   the program SIGKILLs its holder: every call on a served
#                descriptor and every open of a served path is EIO, and
#                wtio-run reports what was lost (exit 125) or nothing
# and the holder's stats show the files served (no demotion, but those
# execinherit and misc ask for). SHARED_FLAG= runs it all under the
# per-process shim, to show that it fails there. ONLY_MODES, ONLY_ROLES
# narrow a run.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -x "$BIN" ] || skip "shared_matrix not built"
OUT=$SHIM_TMP/out
ROLES=${ONLY_ROLES:-overlap position append kill execinherit misc holderkill}
[ -x "$SHIM_BIN/shared_misc" ] || skip "shared_misc not built"

# min_served ROLE: the opens the role makes of served files, at least
min_served() {
	case $1 in
	overlap) echo 8 ;;
	position) echo 2 ;;
	append) echo 4 ;;
	kill) echo 4 ;;
	execinherit) echo 2 ;;
	misc) echo 6 ;;
	*) echo 1 ;;
	esac
}

for mode in ${ONLY_MODES:-$MODES}; do
	for role in $ROLES; do
		what="$mode $role"
		[ -n "$SHARED_FLAG" ] || what="$what (per-process shim)"
		rm -rf "$SERVED"/* "$OUT"
		mkdir -p "$OUT"
		if [ "$role" = misc ]; then
			prog=("$SHIM_BIN/shared_misc" "$SERVED" "$OUT")
		else
			prog=("$BIN" "$role" "$SERVED" "$OUT")
		fi
		srun "$mode" "$STATS" -- "${prog[@]}" >"$OUT/log" 2>&1
		rc=$?
		if [ "$role" = holderkill ]; then
			# the holder is gone: no stats; the checker's verdict, and
			# wtio-run's status the program's, or 125 when its report
			# says what the holder had not written back was lost
			for i in $(seq 300); do
				grep -q "^PASS: holderkill\|^FAIL" "$OUT/log" && break
				sleep 0.1
			done
			grep -q "^PASS: holderkill" "$OUT/log" ||
				fail "$what: (exit $rc) $(grep -v '^wtio-preload\[' "$OUT/log" | tail -5)"
			if [ -n "$SHARED_FLAG" ]; then
				if grep -q "^wtio-run: not written back, lost: " "$OUT/log"; then
					[ "$rc" = 125 ] ||
						fail "$what: data lost with the holder, but wtio-run exited $rc, not 125"
				else
					grep -q "^wtio-run: nothing was lost" "$OUT/log" ||
						fail "$what: wtio-run reported nothing of the holder's death: $(tail -5 "$OUT/log")"
					[ "$rc" = 0 ] ||
						fail "$what: wtio-run exited $rc, not the program's status 0"
				fi
			fi
			echo "ok: $what (wtio-run exited $rc)"
			continue
		fi
		[ "$rc" = 0 ] && grep -q "^PASS: $role" "$OUT/log" ||
			fail "$what: exit $rc: $(grep -v '^wtio-preload\[' "$OUT/log" | tail -8)"
		wait_holder "$STATS"
		[ "$role" = execinherit ] && [ -z "$SHARED_FLAG" ] ||
			served_at_least "$STATS" "$(min_served "$role")" "$what"
		if [ -n "$SHARED_FLAG" ]; then
			d=$(demotions "$STATS")
			if [ "$role" = misc ]; then
				# mmap and copy_file_range (program), flock (lock)
				[ "$(stat_of "$STATS" demoted_program)" -ge 2 ] &&
					[ "$(stat_of "$STATS" demoted_lock)" -ge 1 ] ||
					fail "$what: want the files of mmap, copy_file_range and flock passed through: $(grep '^demoted' "$STATS" | tr '\n' ' ')"
			elif [ "$role" = execinherit ]; then
				e=$(stat_of "$STATS" demoted_exec)
				[ "${e:-0}" -ge 1 ] && [ "$d" = "$e" ] ||
					fail "$what: want exec demotions only (at least one, for the inherited descriptor): $(tr '\n' ' ' <"$STATS")"
			else
				[ "$d" = 0 ] ||
					fail "$what: $d demotions (files passed through): $(grep '^demoted' "$STATS" | tr '\n' ' ') $(grep -i demot "$STATS.log" | head -3)"
			fi
		fi
		# after the program: what the holder wrote back
		case $role in
		overlap)
			for f in 0 1; do
				cmp "$SERVED/f$f" "$OUT/model$f" ||
					fail "$what: f$f on disk after the program differs from the shadow ($(stat -c %s "$SERVED/f$f") bytes, want $(stat -c %s "$OUT/model$f"))"
			done ;;
		append)
			"$BIN" verify-append "$SERVED" "$OUT" || fail "$what: on disk" ;;
		kill)
			"$BIN" verify-kill "$SERVED" "$OUT" || fail "$what: on disk" ;;
		esac
		echo "ok: $what: $(grep '^PASS' "$OUT/log" | head -1 | cut -c7-)"
	done
done
echo "PASS: the fork/exec matrix under one cache per program in: ${ONLY_MODES:-$MODES}"
