#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `wtio-run --shared`: the holder opens files with its own credentials, so
# a process of the program with fewer rights than the holder must not be
# served a file the kernel refuses it (review6 F2: a root process with
# CAP_DAC_OVERRIDE dropped read and overwrote nobody's 0600 file; a child
# that dropped to uid 65534 after its thread connected truncated root's).
#  1. Under the shim: setpriv without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH
#     (cat, a shell's >), and a child that read a served file as root, then
#     setuid / seteuid / setfsuid to 65534, opening root's 0600 file rpriv
#     read-only, read-write and O_TRUNC: every answer exactly as without
#     wtio-run (priv is nobody's 0600 file), the files unchanged, the honest opens served; the shim's
#     own check answers these (the holder counts no refusal).
#  2. Without the shim's check (tests/holder/holder_creds.c speaks the
#     protocol itself after dropping its rights, or from a child on its
#     parent's connection): the holder itself answers "not served".
# Needs root, setpriv (util-linux) and python3.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
[ "$(id -u)" = 0 ] || skip "needs root (to drop capabilities and uids)"
SETPRIV=$(command -v setpriv || true)
[ -n "$SETPRIV" ] || skip "setpriv (util-linux) not installed"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
HC=$SHIM_BIN/holder_creds
NOP=$SHIM_BIN/libholder_nop.so
[ -x "$HC" ] && [ -f "$NOP" ] || skip "holder_creds or libholder_nop.so not built"
"$SETPRIV" --bounding-set=-dac_override -- true 2>/dev/null ||
	skip "setpriv cannot drop a capability here"
chmod 755 "$SHIM_TMP"
chmod 777 "$SERVED"

cat >"$SHIM_TMP/drop.py" <<'PYEOF'
import ctypes, os, sys
d, how = sys.argv[1], sys.argv[2]
pid = os.fork()
if pid == 0:
    # this thread's connection is made as root (under the shim)
    f = os.open(d + '/pub', os.O_RDONLY); os.read(f, 3)
    if how == 'setuid':
        os.setgid(65534); os.setuid(65534)
    elif how == 'seteuid':
        os.setegid(65534); os.seteuid(65534)
    elif how == 'setfsuid':
        libc = ctypes.CDLL(None); libc.setfsgid(65534); libc.setfsuid(65534)
    for fl in (os.O_RDONLY, os.O_RDWR, os.O_WRONLY | os.O_TRUNC):
        try:
            g = os.open(d + '/rpriv', fl)
            print(how, fl, 'OPENED'); os.close(g)
        except OSError as e:
            print(how, fl, e.strerror)
    print(how, 'old fd', os.pread(f, 3, 0))
    os._exit(0)
os.waitpid(pid, 0)
PYEOF

# the program: the same commands with and without wtio-run
cat >"$SHIM_TMP/prog.sh" <<'EOF'
d=$1 setpriv=$2 py=$3 tmp=$4
cat "$d/pub"
"$setpriv" --inh-caps=-all --bounding-set=-dac_override,-dac_read_search -- cat "$d/priv" 2>&1 |
	sed 's/^[^:]*: //'
"$setpriv" --inh-caps=-all --bounding-set=-dac_override,-dac_read_search -- \
	sh -c "echo HACK > '$d/priv'" 2>&1 | sed 's/^.*: //'
for how in setuid seteuid setfsuid; do
	"$py" "$tmp/drop.py" "$d" $how
done
cat "$d/pub"
EOF

setup() {
	rm -rf "${SERVED:?}"/*
	echo pub >"$SERVED/pub"
	chmod 644 "$SERVED/pub"
	echo TOPSECRET >"$SERVED/priv"
	chown 65534:65534 "$SERVED/priv"
	chmod 600 "$SERVED/priv"
	echo ROOTSECRET >"$SERVED/rpriv"
	chmod 600 "$SERVED/rpriv"
}
check_priv() {	# WHAT
	[ "$(cat "$SERVED/priv")" = TOPSECRET ] ||
		fail "$1: priv is now '$(cat "$SERVED/priv")'"
	[ "$(cat "$SERVED/rpriv")" = ROOTSECRET ] ||
		fail "$1: rpriv is now '$(cat "$SERVED/rpriv")'"
}

setup
bash "$SHIM_TMP/prog.sh" "$SERVED" "$SETPRIV" "$PY" "$SHIM_TMP" >"$SHIM_TMP/kernel" 2>&1
check_priv "without wtio-run"
grep -q "Permission denied" "$SHIM_TMP/kernel" ||
	skip "the kernel refuses nothing here: $(cat "$SHIM_TMP/kernel")"
for mode in writeback writethrough; do
	setup
	srun "$mode" "$STATS" -- bash "$SHIM_TMP/prog.sh" "$SERVED" "$SETPRIV" \
		"$PY" "$SHIM_TMP" >"$SHIM_TMP/out" 2>&1
	wait_holder "$STATS"
	diff -u "$SHIM_TMP/kernel" "$SHIM_TMP/out" >"$SHIM_TMP/diff" ||
		fail "$mode: not the kernel's answers (- without wtio-run, + with): $(cat "$SHIM_TMP/diff")"
	check_priv "$mode"
	served_at_least "$STATS" 4 "$mode: the root processes' opens of pub"
	[ "$(stat_of "$STATS" not_served_creds)" = 0 ] ||
		fail "$mode: the holder refused $(stat_of "$STATS" not_served_creds) opens: the shim's own check should have answered them"
	echo "ok: $mode: capabilities dropped, setuid, seteuid, setfsuid after connecting: the kernel's answers, priv unchanged"
done

# 2. the holder's own check
want=0
for how in caps setuid seteuid setfsuid inherit; do
	setup
	out=$(WTIO_HOLDER_STATS=$STATS timeout 120 "$WTIO_RUN" --shared \
		--log="$STATS.log" --preload="$NOP" --paths="$SERVED" \
		--cache-size=64M --debug -- "$HC" "$SERVED" $how 2>&1) ||
		fail "$how: holder_creds failed: $out"
	wait_holder "$STATS"
	check_priv "$how (protocol)"
	n=$(sed -n 's/^refused //p' <<<"$out")
	[ "$(stat_of "$STATS" not_served_creds)" = "$n" ] ||
		fail "$how: $n refused opens, not_served_creds $(stat_of "$STATS" not_served_creds)"
	served_at_least "$STATS" 1 "$how: the opens with the holder's credentials"
	grep -q "has other credentials than the holder's" "$STATS.log" ||
		fail "$how: no debug line for the refusal: $(cat "$STATS.log")"
	echo "ok: $how: the holder itself refuses $n opens of a client speaking the protocol"
done
echo "PASS: shim-shared-creds"
