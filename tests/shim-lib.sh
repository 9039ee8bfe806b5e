# SPDX-License-Identifier: MIT
# Sourced by the tests/shim-*.sh scripts. Environment from tests/meson.build:
#   WTIO_RUN, WTIO_PRELOAD, SHIM_BIN (helper programs), B_SANITIZE
# Exit codes: 0 pass, 1 fail, 77 skip (with a reason on stdout).
set -u

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

case "${B_SANITIZE:-none}" in
none|"") ;;
*) skip "sanitizer build (b_sanitize=$B_SANITIZE): preloading a sanitized .so into uninstrumented programs needs the sanitizer runtime first; the shim tests run in the plain build" ;;
esac
[ -x "${WTIO_RUN:-}" ] || skip "wtio-run not built"
[ -f "${WTIO_PRELOAD:-}" ] || skip "libwtio-preload.so not built"

MODES="writeback writethrough writethrough-noserial dontcache"
SHIM_TMP=$(mktemp -d "${SHIM_TMPDIR:-$PWD}/shim-test.XXXXXX") || fail "mktemp"
trap 'rm -rf "$SHIM_TMP"' EXIT
SERVED=$SHIM_TMP/served
mkdir -p "$SERVED"

# O_DIRECT must work where the files are, or wtio passes everything through
if ! dd if=/dev/zero of="$SERVED/.odirect" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
	skip "the filesystem of $SERVED refuses O_DIRECT"
fi
rm -f "$SERVED/.odirect"

# run MODE [EXTRA...] -- PROGRAM ARGS: PROGRAM under the shim, files in SERVED
run() {
	local mode=$1
	shift
	"$WTIO_RUN" --preload="$WTIO_PRELOAD" --mode="$mode" --paths="$SERVED" \
		--cache-size=64M "$@"
}

# Is the shim really serving? One served open must show up in debug output.
check_served() {
	local out
	out=$(run writeback --debug -- dd if=/dev/zero of="$SERVED/.probe" bs=4k count=1 status=none 2>&1)
	rm -f "$SERVED/.probe"
	grep -q "served by wtio" <<<"$out" || fail "the shim served nothing: $out"
}
check_served
