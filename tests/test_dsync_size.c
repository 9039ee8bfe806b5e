/* SPDX-License-Identifier: MIT */
/*
 * test_dsync_size.c - an extending WTIO_DSYNC write leaves the backing
 * file at its exact new size, as O_DSYNC does, in every write mode: a
 * log appended in 100-byte records must not be seen by other programs,
 * or found after a crash, ending in zeros up to the next block.
 */
#include "helpers.h"

#define REC 100
#define NR 40

static void appends(const char *path, unsigned int flags, const char *what)
{
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	char rec[REC];
	struct stat st;

	CHECK_OK(wtio_ctx_create(NULL, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &f));
	for (int i = 0; i < NR; i++) {
		memset(rec, 'a' + i % 26, sizeof(rec));
		CHECK_EQ(wtio_pwrite(f, rec, REC, (off_t)i * REC, flags), REC);
		/* What another program sees now, through the kernel. */
		CHECK_OK(stat(path, &st));
		CHECKF(st.st_size == (off_t)(i + 1) * REC, "%s: after record "
		       "%d the file is %lld bytes, want %d", what, i,
		       (long long)st.st_size, (i + 1) * REC);
	}
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("%s: exact size after each of %d appends\n", what, NR);
}

int main(void)
{
	char path[64];

	t_require_odirect();
	snprintf(path, sizeof(path), "dsync_size.%d", (int)getpid());
	appends(path, WTIO_DSYNC, "write-back DSYNC");
	appends(path, WTIO_WRITETHROUGH | WTIO_DSYNC, "write-through DSYNC");
	appends(path, WTIO_WRITETHROUGH | WTIO_DONTCACHE | WTIO_DSYNC,
		"write-through drop-behind DSYNC");
	unlink(path);
	printf("PASS\n");
	return T_EXIT_PASS;
}
