/* SPDX-License-Identifier: MIT */
/*
 * test_atomic_cached_window.c - untorn writes while another thread's
 * write goes through the kernel's cache (io_backend.c,
 * wtio_io_pwrite_cached: O_DIRECT off on the shared description for one
 * pwritev2). The kernel refuses RWF_ATOMIC without O_DIRECT
 * (EOPNOTSUPP); such a refusal inside the window must be made again, not
 * returned and recorded (fsync then failed although every byte was on
 * disk; hostile review, 2026-12-07).
 *
 * On an XFS loop image (untorn writes need it): one thread makes cached
 * writes far past the data, as fast as it can, for 2 seconds; two
 * threads make 4 KiB WTIO_ATOMIC overwrites meanwhile. Every one must
 * succeed, fsync must return 0, and the disk must hold the last data of
 * each block. Skips (77) where the image or untorn writes are missing.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "xfs_loop.h"
#include "inode.h"
#include "ctx.h"

#define BS	4096
#define NBLK	64
#define SECS	2

static struct wtio_file *f;
static atomic_bool stop;
static atomic_long windows;
static uint8_t shadow[2][NBLK / 2][BS];	/* each writer its half */

static void *cached_thread(void *arg)
{
	char buf[100];
	struct iovec v = { buf, sizeof(buf) };

	(void)arg;
	memset(buf, 'c', sizeof(buf));
	while (!atomic_load(&stop)) {
		ssize_t n = wtio_io_write_cached(&f->ctx->io, f->inode->fd,
						 &v, 1, 64 << 20);

		CHECKF(n == (ssize_t)sizeof(buf), "write_cached: %zd", n);
		atomic_fetch_add(&windows, 1);
	}
	return NULL;
}

static void *atomic_thread(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint8_t *buf = t_malloc(BS);
	long i = 0;

	while (!atomic_load(&stop)) {
		int b = (int)(i % (NBLK / 2));
		off_t off = (off_t)(me * (NBLK / 2) + b) * BS;
		ssize_t n;

		t_fill(buf, BS, (uint64_t)(me * 1000003 + i), (uint64_t)off);
		n = wtio_pwrite(f, buf, BS, off, WTIO_ATOMIC);
		CHECKF(n == BS, "atomic write %ld of thread %d: %zd (%s)", i,
		       me, n, n < 0 ? strerror((int)-n) : "short");
		memcpy(shadow[me][b], buf, BS);
		i++;
	}
	free(buf);
	return NULL;
}

int main(void)
{
	uint8_t *img = t_zalloc(NBLK * BS);
	struct wtio_file_info info;
	struct wtio_ctx *ctx;
	pthread_t c, a[2];
	char path[256];
	int i, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	xl_setup_shm_or_exit("atomic-cached", 512ll << 20, "");
	xl_path(path, sizeof(path), "f");
	close(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	t_write_disk(path, img, NBLK * BS);
	ctx = t_ctx(BS, 256, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_file_info(f, &info));
	if (info.atomic_unit_min == 0 || info.atomic_unit_min > BS ||
	    info.atomic_unit_max < BS) {
		printf("SKIP: no 4 KiB untorn writes on this file (statx: %u..%u)\n",
		       info.atomic_unit_min, info.atomic_unit_max);
		wtio_close(f);
		wtio_ctx_destroy(ctx);
		xl_cleanup();
		return 77;
	}
	CHECK_OK(pthread_create(&c, NULL, cached_thread, NULL));
	for (i = 0; i < 2; i++)
		CHECK_OK(pthread_create(&a[i], NULL, atomic_thread,
					(void *)(intptr_t)i));
	sleep(SECS);
	atomic_store(&stop, true);
	CHECK_OK(pthread_join(c, NULL));
	for (i = 0; i < 2; i++)
		CHECK_OK(pthread_join(a[i], NULL));
	ret = wtio_fsync(f);
	CHECKF(ret == 0, "fsync: %d (%s): every write succeeded", ret,
	       strerror(-ret));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	for (i = 0; i < NBLK; i++)
		memcpy(img + (size_t)i * BS, shadow[i / (NBLK / 2)][i % (NBLK / 2)],
		       BS);
	{
		/* blocks no writer reached stay zero in both */
		int fd = open(path, O_RDONLY);
		uint8_t *disk = t_zalloc(NBLK * BS);

		CHECK(fd >= 0);
		CHECK_EQ(pread(fd, disk, NBLK * BS, 0), NBLK * BS);
		close(fd);
		CHECK(memcmp(disk, img, NBLK * BS) == 0);
		free(disk);
	}
	printf("ok: %ld cached writes beside untorn writes: every untorn write succeeded\n",
	       atomic_load(&windows));
	CHECK(atomic_load(&windows) > 0);
	xl_cleanup();
	free(img);
	printf("PASS\n");
	return 0;
}
