#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ioctl on served files: FICLONE, FICLONERANGE (through syscall(SYS_ioctl)),
# FIDEDUPERANGE, FIONREAD, FIEMAP, the XFS space calls (ZERO_RANGE,
# UNRESVSP64, RESVSP64) and an unknown request, each checked for coherent
# data and size, under wtio-run in every mode, on XFS with reflink
# (tests/shim/shim_raw.c).
# A manual run can be narrowed: ONLY_MODES="writeback", SHIM_CASES="clone".
. "$(dirname "$0")/shim-ioctl-xfs.sh"

cases=${SHIM_CASES:-"fionread fiemap unknown-ioctl clone dedupe xfs-space"}
skipped=
for mode in ${ONLY_MODES:-$MODES}; do
	for grp in "$cases"; do
		shim_raw_group "$mode" "$grp"
	done
done
[ -n "$skipped" ] && skip "a part could not run here (see 'skipped part' above)"
exit 0
