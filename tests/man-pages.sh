#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# man-pages.sh SRCDIR - the manual matches the public API.
#
#  - every function declared in include/wtio.h, and every symbol that
#    src/libwtio.map exports (less the test-only API of a wtio_fault.h),
#    has a page man/NAME.3, whose NAME section lists it and whose
#    rendered SYNOPSIS holds its prototype exactly as the header has it;
#    a link page (.so man3/OTHER.3) counts when OTHER.3 does that;
#  - every man/*.3 but the overviews (wtio.3, wtio_queue.3) is such a
#    page: none is left for a call that is gone;
#  - every page renders with groff -man -ww without a warning, every
#    wtio page it refers to exists, and man/meson.build installs it.
# Exit 0 pass, 1 fail (each problem printed), 77 when groff is missing.
set -uo pipefail

src=${1:?usage: man-pages.sh SRCDIR}
man=$src/man
fail=0

bad() {
	echo "man-pages: $*"
	fail=1
}

for p in groff perl; do
	if ! command -v "$p" >/dev/null 2>&1; then
		echo "man-pages: SKIP: no $p here to render or parse the pages"
		exit 77
	fi
done

# "name<TAB>prototype without whitespace" for each function of wtio.h.
protos=$(perl -0777 -ne '
	s{/\*.*?\*/}{}gs;		# comments
	s{^\s*#.*$}{}mg;		# preprocessor lines
	s{^\s*(extern "C" \{|\})\s*$}{}mg;
	for my $d (split /;/) {
		next unless $d =~ /\b(wtio_\w+)\s*\(/;
		my $n = $1;
		(my $p = $d) =~ s/\s+//g;
		print "$n\t$p;\n";
	}' "$src/include/wtio.h")
if [ -z "$protos" ]; then
	bad "no function found in include/wtio.h"
	exit 1
fi

# The test-only API (fault injection) is documented in its own header.
testonly=$(find "$src" -name wtio_fault.h -not -path '*/build*' -print0 |
	   xargs -0 -r perl -0777 -ne 's{/\*.*?\*/}{}gs;
		print "$1\n" while /\b(wtio_\w+)\s*\(/g' | sort -u)
mapped=$(perl -ne 'print "$1\n" if /^\s*(wtio_\w+)\s*;/' "$src/src/libwtio.map")

names=$( { cut -f1 <<<"$protos"; echo "$mapped"; } | sort -u)
for n in $names; do
	if grep -qx "$n" <<<"$testonly" && ! cut -f1 <<<"$protos" | grep -qx "$n"; then
		continue
	fi
	page=$man/$n.3
	if [ ! -f "$page" ]; then
		bad "$n has no page man/$n.3"
		continue
	fi
	# A link page: the page it names covers this call.
	if link=$(sed -n 's/^\.so[[:space:]]\+man3\/\(.*\)$/\1/p' "$page") && [ -n "$link" ]; then
		page=$man/$link
		if [ ! -f "$page" ]; then
			bad "man/$n.3 links to man3/$link, which is not in man/"
			continue
		fi
	fi
	if ! sed -n '/^\.SH NAME/,/^\.SH/p' "$page" | grep -qw -- "$n"; then
		bad "$(basename "$page")'s NAME section does not list $n"
	fi
	want=$(grep -P "^$n\t" <<<"$protos" | cut -f2)
	if [ -z "$want" ]; then
		bad "$n is exported by src/libwtio.map but not declared in include/wtio.h"
		continue
	fi
	got=$(groff -man -Tascii -P-cbou "$page" 2>/dev/null |
	      sed -n '/^SYNOPSIS/,/^[A-Z]/p' | tr -d ' \t\n')
	if [[ "$got" != *"$want"* ]]; then
		bad "$(basename "$page")'s SYNOPSIS lacks the prototype of $n exactly as include/wtio.h declares it"
	fi
done

# No page for a call that is not there (or not public).
for page in "$man"/*.3; do
	b=$(basename "$page" .3)
	case $b in wtio | wtio_queue) continue ;; esac
	cut -f1 <<<"$protos" | grep -qx "$b" ||
		bad "man/$b.3 documents no function of include/wtio.h"
done

# Every page renders cleanly, refers to pages that exist, is installed.
for page in "$man"/*.[1-9]; do
	b=$(basename "$page")
	grep -q "'$b'" "$man/meson.build" || bad "man/meson.build does not install $b"
	grep -q '^\.so ' "$page" && continue
	out=$(groff -man -ww -z "$page" 2>&1)
	[ -z "$out" ] || bad "$b: groff warns: $out"
	while read -r ref sec; do
		[ -f "$man/$ref.$sec" ] || bad "$b refers to $ref($sec), which is not in man/"
	done < <(perl -ne 'print "$1 $2\n" while /^\.[BI]R\s+(wtio[\w-]*)\s+\((\d)\)/g' "$page")
done

if [ "$fail" = 0 ]; then
	echo "man-pages: $(wc -l <<<"$protos") functions, $(ls "$man" | grep -c '\.[1-9]$') pages: OK"
fi
exit $fail
