#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `wtio-run --shared`: a process of the program in another mount namespace
# (unshare -m, then a bind mount over the served directory) names other
# files by the same paths. Its reads and writes must reach its own files,
# as on the kernel, never the holder's files of those paths (REVIEW-B B11:
# it read the holder's file and created its file in the holder's
# directory). Every mode. Needs root (mount), unshare(1).
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
[ "$(id -u)" -eq 0 ] || skip "not root: cannot bind-mount in a mount namespace"
command -v unshare >/dev/null || skip "no unshare(1)"
ALT=$SHIM_TMP/alt
mkdir -p "$ALT"
unshare -m sh -c "mount --bind '$ALT' '$SERVED'" 2>/dev/null ||
	skip "cannot bind-mount in a new mount namespace here"
for mode in $MODES; do
	rm -f "$SERVED"/* "$ALT"/*
	echo orig >"$SERVED/x"
	echo alt >"$ALT/x"
	# the program's first process serves x (the holder's file), then a
	# child in its own namespace reads x and writes w and x there
	srun "$mode" "$STATS" -- sh -c '
		exec 3<"$1/x"; read -r a <&3
		unshare -m sh -c "mount --bind \"\$2\" \"\$1\" && cat \"\$1/x\" &&
			echo in-ns >\"\$1/w\" && echo changed >>\"\$1/x\"" sh "$1" "$2" || exit 9
		read -r b <"$1/x"; echo "$a $b"' sh "$SERVED" "$ALT" >"$SHIM_TMP/out" 2>&1 ||
		fail "$mode: the program failed: $(cat "$SHIM_TMP/out")"
	wait_holder "$STATS"
	[ "$(head -1 "$SHIM_TMP/out")" = alt ] ||
		fail "$mode: the process in the other namespace read '$(head -1 "$SHIM_TMP/out")', not its own file (alt)"
	[ "$(sed -n 2p "$SHIM_TMP/out")" = "orig orig" ] ||
		fail "$mode: the program's own file changed: '$(sed -n 2p "$SHIM_TMP/out")'"
	[ -e "$ALT/w" ] && [ ! -e "$SERVED/w" ] ||
		fail "$mode: the other namespace's new file went to $(ls "$SERVED" "$ALT" | tr '\n' ' ')"
	[ "$(cat "$ALT/x")" = "alt
changed" ] || fail "$mode: its own x is '$(cat "$ALT/x")'"
	[ "$(cat "$SERVED/x")" = orig ] || fail "$mode: the holder's x is '$(cat "$SERVED/x")'"
	served_at_least "$STATS" 1 "$mode"
	echo "ok: $mode: a process in another mount namespace reads and writes its own files"
done
echo "PASS: shim-shared-namespace"
