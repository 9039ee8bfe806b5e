#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-man: the man page's option list is the option table's (what
# wtio-bench --man-options prints), and every option of the table is in
# --help; so neither can drift from what the parser accepts.
# Usage: bench-man.sh PATH/TO/wtio-bench PATH/TO/wtio-bench.1   exit 0 pass, 1 fail
set -u
B=${1:?usage: $0 wtio-bench man-page}
M=${2:?usage: $0 wtio-bench man-page}
fail=0
want=$("$B" --man-options) || { echo "FAIL: --man-options exit $?"; exit 1; }
have=$(sed -n '/^\.\\" BEGIN OPTIONS$/,/^\.\\" END OPTIONS$/p' "$M" | sed '1d;$d')
if [ "$want" != "$have" ]; then
	echo "FAIL: $M's option list differs from the table; regenerate it with"
	echo "      wtio-bench --man-options (between the BEGIN/END OPTIONS lines)"
	diff <(echo "$have") <(echo "$want") | head -20
	fail=1
fi
help=$("$B" --help)
# every option the table prints for the man page, by name
for o in $(sed -n 's/^\.B \\-\\-//p' <<<"$want" | sed 's/\\f.*//; s/\\-/-/g'); do
	grep -q -- "--$o\b" <<<"$help" || { echo "FAIL: --$o not in --help"; fail=1; }
done
[ $fail = 0 ] && echo "PASS" && exit 0
exit 1
