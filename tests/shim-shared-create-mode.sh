#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The mode of a file created under `wtio-run --shared` is the kernel's:
# the holder creates it, so the program's umask must be applied as the
# kernel would, which a directory's default ACL overrides (the umask is
# then not applied at all). Files created bare and under --shared, with
# umasks 077, 022 and 0, modes 0666, 0640 and 0777, in a plain directory
# and in one with a default ACL (set through its xattr: no acl package
# needed), must get the same modes. The holder applied the umask itself
# and gave 0600 where the kernel gives 0666.
. "$(dirname "$0")/shim-lib.sh"
. "$(dirname "$0")/shim-shared-lib.sh"
[ -n "$SHARED_FLAG" ] || skip "only with --shared"
PY=$(command -v python3 || true)
[ -n "$PY" ] || skip "python3 not installed"
mkdir -p "$SERVED/plain" "$SERVED/acl"
# user::rwx group::rwx other::rwx as the directory's default ACL
"$PY" -c "import os, struct, sys; os.setxattr(sys.argv[1], 'system.posix_acl_default', struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, 7, 0xffffffff) for t in (1, 4, 0x20)))" "$SERVED/acl" 2>/dev/null ||
	skip "the tests' filesystem takes no default ACL"

cat >"$SHIM_TMP/create.py" <<'PYEOF'
import os, sys
d, tag = sys.argv[1], sys.argv[2]
out = []
for um in (0o077, 0o022, 0):
    os.umask(um)
    for mode in (0o666, 0o640, 0o777):
        for sub in ("plain", "acl"):
            p = os.path.join(d, sub, "%s-%o-%o" % (tag, um, mode))
            os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_RDWR, mode))
            out.append("%s %o %o %o" % (sub, um, mode, os.stat(p).st_mode & 0o7777))
print("\n".join(out))
PYEOF
bare=$("$PY" "$SHIM_TMP/create.py" "$SERVED" bare) || fail "bare: the creates failed"
grep -q '^acl 77 666 666$' <<<"$bare" ||
	skip "the default ACL does not override the umask here: $(grep '^acl 77 666' <<<"$bare")"
for mode in writeback writethrough; do
	got=$(srun "$mode" "$STATS" -- "$PY" "$SHIM_TMP/create.py" "$SERVED" "$mode") ||
		fail "$mode: the creates failed: $got"
	wait_holder "$STATS"
	served_at_least "$STATS" 18 "$mode creates"
	[ "$got" = "$bare" ] ||
		fail "$mode: modes differ from the kernel's (dir umask mode got): $(diff <(echo "$bare") <(echo "$got") | tr '\n' ' ')"
	echo "ok: $mode: 18 creates, modes as the kernel's, default ACL included"
done
echo "PASS: files created under --shared get the kernel's modes"
