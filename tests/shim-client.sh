#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shim-client.sh - the shim's client side of wtio-run --shared (preload/
# remote*.c) against a stand-in holder, tests/holder_fake.py (the kernel's
# page cache behind the protocol): every call of tests/shim/shim_client.c
# on served files answers as the kernel would, through the holder (reads,
# writes, positions shared by dup and fork, O_APPEND from a child, flags,
# buffers grown and calls split, mmap and exec passing a file through,
# stdio); the protocol is spoken as docs/SHIM.md says (HELLO_EXEC first,
# a fork child claims its parent's token, every close drops its
# reference); and once the holder is killed every call on a served file
# fails with EIO, never a silent success. Then shim_client against the
# real holder in every mode, and a passed-through file served again once
# its descriptors are closed.
. "$(dirname "$0")/shim-lib.sh"

command -v python3 >/dev/null || skip "python3 missing (the stand-in holder)"
FAKE=$(dirname "$(readlink -f "$0")")/holder_fake.py
CLIENT=$SHIM_BIN/shim_client
[ -x "$CLIENT" ] || skip "shim_client not built"

name=wtio-fake-$$-$RANDOM
log=$SHIM_TMP/fake.log
python3 "$FAKE" "$name" "$log" &
fpid=$!
trap 'kill $fpid 2>/dev/null; rm -rf "$SHIM_TMP"' EXIT
for _ in $(seq 100); do
	grep -q ready "$log" 2>/dev/null && break
	sleep 0.1
done
grep -q ready "$log" || fail "the stand-in holder did not start"

client() {
	env LD_PRELOAD="$WTIO_PRELOAD" WTIO_HOLDER="@$name" \
		WTIO_PATHS="$SERVED" "$@"
}

out=$(client "$CLIENT" basic "$SERVED" 2>&1) || fail "shim_client basic: $out"

# the protocol as the client speaks it
first=$(grep -m1 ' HELLO ' "$log")
grep -q 'args=1,1048576,2,0' <<<"$first" ||
	fail "the first HELLO of an image carries HELLO_EXEC: $first"
token=$(awk '/ FORK_PREPARE /{print $NF; exit}' "$log")
[ -n "$token" ] || fail "no HOP_FORK_PREPARE at fork"
grep -q " HELLO ofd=0 args=1,1048576,1,$token " "$log" ||
	fail "the fork child did not claim token $token"
grep -q " FORK_DONE ofd=0 args=$token," "$log" ||
	fail "the parent did not report the child of token $token"
grep -q ' BUFFER ' "$log" || fail "no buffer grown for a 3 MiB write"
grep -q ' DEMOTE .*args=0,' "$log" || fail "mmap did not pass the file through"
grep -q ' DEMOTE .*args=1,' "$log" ||
	fail "exec did not pass the inherited descriptor through"
grep -q ' EXEC ' "$log" || fail "no HOP_EXEC before exec"
opens=$(grep -c ' OPEN .*-> 1099511627776$' "$log")
unrefs=$(grep -c ' UNREF ' "$log")
[ "$opens" -gt 5 ] && [ "$unrefs" -gt 5 ] ||
	fail "$opens served opens, $unrefs references dropped"
if grep -E ' (READ|WRITE) .*-> -' "$log" | grep -v -- '-> -9$'; then
	fail "a data request failed (above), other than the EBADF asked for"
fi

out=$(client "$CLIENT" wberr "$SERVED" 2>&1) ||
	fail "a demotion's write-back error: $out"

# the holder killed: EIO for every call on a served file, and its opens
mkfifo "$SHIM_TMP/go"
client "$CLIENT" dead "$SERVED/dead" <"$SHIM_TMP/go" >"$SHIM_TMP/dead.out" 2>&1 &
cpid=$!
exec 3>"$SHIM_TMP/go"
for _ in $(seq 100); do
	grep -q ready "$SHIM_TMP/dead.out" && break
	sleep 0.1
done
kill -9 $fpid
wait $fpid 2>/dev/null
echo go >&3
exec 3>&-
wait $cpid || fail "after the holder's death: $(cat "$SHIM_TMP/dead.out")"

# The same calls against the real holder (wtio-run --shared), every mode;
# and a file passed through (a shell's redirection onto fd 1) is served
# again at its next open once every descriptor of it is closed: the
# passed-through descriptors drop their references; a shell's `exec 3<`
# over the number of a holder connection moves the connection away.
"$WTIO_RUN" --help 2>&1 | grep -q -- --shared ||
	fail "wtio-run has no --shared"
for mode in $MODES; do
	out=$(timeout 120 "$WTIO_RUN" --shared --preload="$WTIO_PRELOAD" \
		--mode="$mode" --paths="$SERVED" --cache-size=64M -- \
		"$CLIENT" basic "$SERVED" 2>&1) ||
		fail "$mode: shim_client basic under wtio-run --shared: $out"
done
rm -f "$SERVED/again" "$SHIM_TMP/stats"
(cd "$SERVED" && WTIO_HOLDER_STATS=$SHIM_TMP/stats timeout 60 "$WTIO_RUN" \
	--shared --preload="$WTIO_PRELOAD" --paths="$SERVED" -- \
	sh -ec 'echo hi > again; exec 3<again; test "$(cat <&3)" = hi; exec 3<&-; cat again') \
	>"$SHIM_TMP/again.out" 2>&1 || fail "redirection then reopen: $(cat "$SHIM_TMP/again.out")"
for _ in $(seq 100); do
	[ -s "$SHIM_TMP/stats" ] && break
	sleep 0.1
done
grep -qx hi "$SHIM_TMP/again.out" || fail "cat after the redirection: $(cat "$SHIM_TMP/again.out")"
served=$(awk '$1 == "opens_served" { print $2 }' "$SHIM_TMP/stats")
[ "${served:-0}" -ge 2 ] ||
	fail "a file passed through was not served again after its descriptors closed: $(tr '\n' ' ' <"$SHIM_TMP/stats")"

echo "PASS: client side against the stand-in holder ($opens served opens) and the holder, $MODES"
