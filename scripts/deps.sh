#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian 12 packages wtio needs to build, test and benchmark,
# only those that are missing. Idempotent; silent when nothing is missing.
set -euo pipefail

packages=(
	meson ninja-build pkg-config gcc clang
	liburing-dev libaio-dev
	xfsprogs e2fsprogs fio gnuplot-nox util-linux python3
	sqlite3 strace postgresql
)

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'
}

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: missing packages (${missing[*]}) and no apt-get; install them by hand" >&2
	exit 1
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo=(sudo)
	else
		echo "deps.sh: missing packages (${missing[*]}); not root and no sudo" >&2
		exit 1
	fi
fi

echo "deps.sh: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
