/* SPDX-License-Identifier: MIT */
/*
 * dioalign.c - refuse a --bs that direct I/O on the target cannot do with
 * a message that says why, instead of a failed run (EINVAL) minutes later.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dioalign.h"
#include "modes.h"

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif

int dioalign_check(const struct job_opts *job, const char *dir, char *err, size_t errlen)
{
	const char *direct = NULL;
	char probe[600];
	struct statx stx;

	for (int i = 0; i < job->nr_modes; i++)
		if (mode_table[job->modes[i]].oflags & O_DIRECT)
			direct = mode_table[job->modes[i]].name;
	if (!direct || job->rw == RW_CREATE)
		return 0;
	snprintf(probe, sizeof(probe), "%s/wtio-bench.%d.dioprobe", dir, (int)getpid());
	int fd = open(probe, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	int ret = statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx);
	close(fd);
	unlink(probe);
	if (ret || !(stx.stx_mask & STATX_DIOALIGN) || !stx.stx_dio_offset_align)
		return 0;
	unsigned int a = stx.stx_dio_offset_align;
	if (job->bs % a == 0)
		return 0;
	snprintf(err, errlen, "--bs=%llu is not a multiple of %u, the direct I/O alignment of "
		 "%s, which %s needs (use a multiple of %u, or leave %s out of --modes)",
		 (unsigned long long)job->bs, a, dir, direct, a, direct);
	return -1;
}
