/* SPDX-License-Identifier: MIT */
/*
 * test_resv_space_left.c - what the reservation of space for dirty data
 * (src/reserve.c) leaves allocated once a file is closed: no more than
 * the kernel's page cache would, on XFS and on ext4 (hostile review,
 * 2026-12-07).
 *
 * 1. Appends (write-back, write-through, write-through DSYNC; 4 KiB
 *    each, 3 MiB in all, so that a chunk is reserved ahead of the end),
 *    then close: the file holds its size's blocks and no more. ext4
 *    ignores a punch past the end of file, which was all the last close
 *    did: 8.5 MiB stayed allocated past the end of a 100 MB file.
 * 2. One-block writes striding 4 MiB past the end (the same modes; on
 *    ext4 not write-back, a known limit), 40 of them: the gaps stay
 *    holes. A write inside the chunk reserved
 *    ahead, past a gap, kept the chunk, which the gap then made part of
 *    the file: 14 MiB allocated for 800 KiB written at a 64 KiB stride,
 *    1.1 GB for 400 KiB at 16 MiB on tmpfs.
 *
 * 3. A growing file still open (100 MiB appended in 1 MiB write-back
 *    writes, in a 512 MiB filesystem): what it holds past its data is at
 *    most a 64th of the space left free, and a MiB. The chunk reserved
 *    ahead was an eighth of the file (13 MiB), space no other program
 *    could have until the close (hostile review: a bare writer filling
 *    the filesystem got 124 MiB beside such a file, 137 beside a bare
 *    one).
 *
 * Blocks are counted with fstat (st_blocks) after close, with 64 KiB of
 * slack for the filesystem's own metadata blocks (ext4 counts its extent
 * tree's blocks in st_blocks). Skips (77) a filesystem whose loop image
 * cannot be mounted; a part that ran and failed fails the test.
 */
#include <sys/stat.h>
#include <sys/vfs.h>

#include "helpers.h"
#include "xfs_loop.h"

#define SLACK	(64 << 10)

static int64_t allocated(const char *path)
{
	struct stat st;

	CHECK(stat(path, &st) == 0);
	return (int64_t)st.st_blocks * 512;
}

static const unsigned int modes[] = {
	0, WTIO_WRITETHROUGH, WTIO_WRITETHROUGH | WTIO_DSYNC,
};
static const char *const mode_names[] = {
	"write-back", "write-through", "write-through DSYNC",
};

/*
 * n one-block writes in mode m, `stride` bytes apart from offset 0
 * (4096: appends), in a fresh context, then close: at most the n blocks
 * written (and the metadata slack) stay allocated.
 */
static void write_and_count(const char *fs, unsigned int m, int64_t stride,
			    int n, const char *what)
{
	uint8_t buf[4096];
	struct wtio_ctx *ctx = t_ctx(4096, 256, WTIO_BACKEND_AUTO);
	struct wtio_file *f;
	char path[256];
	int64_t data = (int64_t)n * 4096, got;
	int i;

	xl_path(path, sizeof(path), "written");
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	memset(buf, 'w', sizeof(buf));
	for (i = 0; i < n; i++)
		CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf), (off_t)(i * stride),
				     modes[m]), 4096);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	got = allocated(path);
	CHECKF(got <= data + SLACK,
	       "%s, %s, %s: %lld bytes allocated after close for %lld written",
	       fs, mode_names[m], what, (long long)got, (long long)data);
	unlink(path);
	printf("  %s, %s, %s: %lld bytes allocated after close: ok\n",
	       fs, mode_names[m], what, (long long)got);
}

static void growing_holds_little(const char *fs, unsigned int m)
{
	static uint8_t buf[1 << 20];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct statfs sfs;
	char path[256];
	int64_t data = 100ll << 20, held, bound, free0;
	int i;

	/* All of it cached and dirty: a flusher's write-back that sets
	 * the backing file's size frees what lies past it (XFS), which
	 * would hide the chunk. */
	wtio_config_init(&cfg);
	cfg.cache_size = 256ull << 20;
	cfg.dirty_background_ratio = 85;
	cfg.dirty_ratio = 90;
	cfg.dirty_expire_ms = 600000;
	ctx = t_ctx_create_or_skip(&cfg);
	xl_path(path, sizeof(path), "growing");
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK(statfs(path, &sfs) == 0);
	free0 = (int64_t)sfs.f_bavail * (int64_t)sfs.f_bsize;
	memset(buf, 'g', sizeof(buf));
	for (i = 0; i < 100; i++)
		CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf),
				     (off_t)i * (off_t)sizeof(buf), modes[m]),
			 (long long)sizeof(buf));
	/* What other programs lost: the free space's fall past the data
	 * (st_blocks does not show ext4's blocks past a backing file's end
	 * that nothing was written to yet). */
	CHECK(statfs(path, &sfs) == 0);
	held = free0 - (int64_t)sfs.f_bavail * (int64_t)sfs.f_bsize - data;
	/* The chunk was taken when the free space had it too. */
	bound = (free0 - data) / 64 + (1 << 20) + SLACK;
	CHECKF(held <= bound,
	       "%s, %s: a growing file open holds %lld bytes past its %lld, "
	       "more than %lld", fs, mode_names[m], (long long)held,
	       (long long)data, (long long)bound);
	printf("  %s, %s, 100 MiB appended, open: %lld bytes held past the "
	       "data (at most %lld): ok\n", fs, mode_names[m], (long long)held,
	       (long long)bound);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
}

static int run_fs(const char *fstype, const char *tag, const char *opts)
{
	unsigned int m;
	int ret;

	xl.fstype = fstype;
	fstype = xl_fstype();
	ret = xl_setup_shm(tag, 512ll << 20, opts);
	if (ret != XL_OK) {
		printf("skipped part %s: %s\n", fstype, xl.why);
		if (ret != XL_SKIP)
			exit(1);
		return 0;
	}
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		write_and_count(fstype, m, 4096, 768, "3 MiB appended");
		/* Known limit (docs/DESIGN.md, "Space for dirty data"): on
		 * ext4 a write-back writer's chunk cannot be given back
		 * while its data past the backing file's end is dirty. */
		if (m == 0 && !strcmp(fstype, "ext4"))
			printf("  skipped part ext4, write-back stride: a known limit, not fixed\n");
		else
			write_and_count(fstype, m, 4 << 20, 40,
					"40 blocks 4 MiB apart");
	}
	growing_holds_little(fstype, 0);
	growing_holds_little(fstype, 1);
	xl_cleanup();
	return 1;
}

int main(void)
{
	int ran = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ran += run_fs(NULL, "resv-left-xfs", "");
	ran += run_fs("ext4", "resv-left-ext4", "-b 4096");
	if (!ran) {
		printf("SKIP: no loop image could be mounted\n");
		return 77;
	}
	printf("PASS\n");
	return 0;
}
