#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Raw syscall() numbers on served files (read/write family, lseek, the stat
# family, truncate, fallocate, copy_file_range, sendfile, splice, the fsync
# family, open/openat/openat2, open_by_handle_at, dup family, close, mmap,
# exit_group, fork, clone3), libaio's io_submit, POSIX AIO and io_uring rings (raw setup
# and liburing), each checked for coherent data and size, under wtio-run in
# every mode, on XFS (tests/shim/shim_raw.c).
# A manual run can be narrowed: ONLY_MODES="writeback", SHIM_CASES="copy".
. "$(dirname "$0")/shim-ioctl-xfs.sh"

cases=${SHIM_CASES:-"read write size truncate fallocate copy sync open handle dup mmap libaio posix-aio exit fork clone3 aliases"}
skipped=
for mode in ${ONLY_MODES:-$MODES}; do
	# the rings pass every file through for the rest of the process:
	# each in a process of its own
	for grp in "$cases" uring-raw uring-lib; do
		shim_raw_group "$mode" "$grp"
	done
done
[ -n "$skipped" ] && skip "a part could not run here (see 'skipped part' above)"
exit 0
