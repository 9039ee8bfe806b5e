/* SPDX-License-Identifier: MIT */
/*
 * test_bad_input.c - every bad input returns the documented negative errno
 * and changes nothing: the file's content and size (in wtio and on disk)
 * are the same after each bad call.
 */
#include <limits.h>

#include "t_fault.h"

#define LEN 20000

static struct wtio_file *f;
static const char *path;
static uint8_t shadow[LEN];
static int nr_checks;

static void unchanged(void)
{
	CHECK_EQ(wtio_file_size(f), LEN);
	t_check_wtio_range(f, shadow, LEN, 0, LEN + 10);
	nr_checks++;
}

#define BAD(expr, err) do {					\
	CHECK_EQ((expr), (err));				\
	unchanged();						\
} while (0)

int main(void)
{
	struct wtio_ctx *ctx;
	struct wtio_config cfg;
	struct wtio_ctx *bad = NULL;
	struct wtio_file *ro, *wo, *dead, *tmp = NULL;
	char buf[256];
	struct iovec iov[2] = { { buf, 10 }, { NULL, 10 } };
	struct iovec iov0 = { buf, 10 };
	uint8_t disk_before[LEN];
	bool big_checked = false;
	int ret_big;

	t_require_odirect();
	ctx = t_ctx(4096, 64, WTIO_BACKEND_AUTO);
	path = t_tmpfile("bad_input");
	f = t_open(ctx, path, O_RDWR);
	t_fill(shadow, LEN, 5, 0);
	CHECK_EQ(wtio_pwrite(f, shadow, LEN, 0, 0), LEN);
	CHECK_OK(wtio_fsync(f));
	memcpy(disk_before, shadow, LEN);
	memset(buf, 0x5a, sizeof(buf));

	/* Any int names an error or none (INT_MIN was undefined: its
	 * negation overflowed; UBSan in the ASan build). */
	CHECK(!strcmp(wtio_strerror(INT_MIN), "Unknown error"));
	CHECK(!strcmp(wtio_strerror(INT_MAX), "Unknown error"));
	CHECK(!strcmp(wtio_strerror(-EIO), wtio_strerror(EIO)));

	/* NULL handles and pointers. */
	BAD(wtio_pread(NULL, buf, 10, 0, 0), -EBADF);
	BAD(wtio_pwrite(NULL, buf, 10, 0, 0), -EBADF);
	BAD(wtio_fsync(NULL), -EBADF);
	BAD(wtio_fdatasync(NULL), -EBADF);
	BAD(wtio_ftruncate(NULL, 0), -EBADF);
	BAD(wtio_sync_range(NULL, 0, 0, WTIO_SYNC_RANGE_WRITE), -EBADF);
	BAD(wtio_file_size(NULL), -EBADF);
	BAD(wtio_close(NULL), -EBADF);
	BAD(wtio_open(NULL, path, O_RDWR, 0, 0, &tmp), -EINVAL);
	BAD(wtio_open(ctx, NULL, O_RDWR, 0, 0, &tmp), -EINVAL);
	BAD(wtio_open(ctx, path, O_RDWR, 0, 0, NULL), -EINVAL);
	CHECK(tmp == NULL);
	BAD(wtio_pwrite(f, NULL, 10, 0, 0), -EFAULT);
	BAD(wtio_pread(f, NULL, 10, 0, 0), -EFAULT);
	BAD(wtio_pwritev(f, NULL, 1, 0, 0), -EFAULT);
	BAD(wtio_pwritev(f, iov, 2, 0, 0), -EFAULT);	/* 2nd iov NULL */
	BAD(wtio_preadv(f, iov, 2, 0, 0), -EFAULT);
	/* A NULL buffer with length 0 is a valid empty I/O. */
	BAD(wtio_pwrite(f, NULL, 0, 0, 0), 0);
	BAD(wtio_pread(f, NULL, 0, 0, 0), 0);
	BAD(wtio_stats(NULL, NULL), -EINVAL);
	BAD(wtio_ctx_create(NULL, NULL), -EINVAL);
	BAD(wtio_ctx_destroy(NULL), -EINVAL);

	/* Offsets. */
	BAD(wtio_pwrite(f, buf, 10, -1, 0), -EINVAL);
	BAD(wtio_pread(f, buf, 10, -1, 0), -EINVAL);
	BAD(wtio_pwrite(f, buf, 10, LLONG_MIN, 0), -EINVAL);
	BAD(wtio_pwrite(f, buf, 10, LLONG_MAX, 0), -EINVAL);
	BAD(wtio_pwrite(f, buf, 10, LLONG_MAX - 5, 0), -EINVAL);
	BAD(wtio_ftruncate(f, -1), -EINVAL);
	/* As ftruncate: past the filesystem's largest file (or wtio's own
	 * cap, 2^62, where the filesystem allows more) is -EFBIG. */
	BAD(wtio_ftruncate(f, LLONG_MAX), -EFBIG);
	BAD(wtio_ftruncate(f, ((off_t)1 << 62) + 1), -EFBIG);
	/* As pwrite: offset + len past the largest off_t is -EINVAL (reads
	 * too); a write at or past the largest file is -EFBIG (2^62 is past
	 * every filesystem's limit under wtio); a read there finds EOF; zero
	 * bytes anywhere do nothing. test_efbig checks the limits on ext4
	 * and XFS. */
	BAD(wtio_pread(f, buf, 10, LLONG_MAX - 5, 0), -EINVAL);
	BAD(wtio_pwrite(f, buf, 10, (off_t)1 << 62, 0), -EFBIG);
	BAD(wtio_pwrite(f, buf, 10, ((off_t)1 << 62) + 1, 0), -EFBIG);
	BAD(wtio_pwrite(f, buf, 10, (off_t)1 << 62, WTIO_WRITETHROUGH),
	    -EFBIG);
	BAD(wtio_pread(f, buf, 10, (off_t)1 << 62, 0), 0);
	BAD(wtio_pwrite(f, buf, 0, LLONG_MAX, 0), 0);
	/* wtio_file_max_size says that limit, the one the shim's lseek
	 * keeps too: past 0, at most 2^62, whole blocks; a write at it is
	 * -EFBIG, ftruncate one past it -EFBIG, to it fine. */
	{
		off_t max = wtio_file_max_size(f);
		struct wtio_file_info info;

		CHECK_OK(wtio_file_info(f, &info));
		CHECKF(max > 0 && max <= (off_t)1 << 62 &&
		       max % info.block_size == 0,
		       "wtio_file_max_size %lld (block %u)", (long long)max,
		       info.block_size);
		BAD(wtio_pwrite(f, buf, 10, max, 0), -EFBIG);
		BAD(wtio_pwrite(f, buf, 1, max, WTIO_WRITETHROUGH), -EFBIG);
		BAD(wtio_ftruncate(f, max + 1), -EFBIG);
		CHECK_OK(wtio_ftruncate(f, max));
		CHECK_EQ(wtio_file_size(f), max);
		BAD(wtio_ftruncate(f, LEN), 0);
		BAD(wtio_file_max_size(NULL), -EBADF);
	}
	{
		struct iovec big[2] = { { buf, SSIZE_MAX }, { buf, 10 } };

		BAD(wtio_pwritev(f, big, 2, 0, 0), -EINVAL);
	}

	/* Flags. */
	BAD(wtio_pwrite(f, buf, 10, 0, 1u << 20), -EINVAL);
	BAD(wtio_pread(f, buf, 10, 0, 1u << 20), -EINVAL);
	BAD(wtio_pwrite(f, buf, 10, 0, 1u << 31), -EINVAL);
	BAD(wtio_pread(f, buf, 10, 0, WTIO_WRITETHROUGH), -EINVAL);
	BAD(wtio_open(ctx, path, O_RDWR, 0, 1u << 20, &tmp), -EINVAL);
	BAD(wtio_open(ctx, path, O_RDWR | 0x40000000, 0, 0, &tmp), -EINVAL);
	BAD(wtio_open(ctx, path, O_ACCMODE, 0, 0, &tmp), -EINVAL);
	CHECK(tmp == NULL);
	BAD(wtio_sync_range(f, 0, 0, 1u << 3), -EINVAL);
	BAD(wtio_sync_range(f, -1, 0, WTIO_SYNC_RANGE_WRITE), -EINVAL);
	BAD(wtio_sync_range(f, 0, -1, WTIO_SYNC_RANGE_WRITE), -EINVAL);
	BAD(wtio_sync_range(f, LLONG_MAX, LLONG_MAX, WTIO_SYNC_RANGE_WRITE),
	    -EINVAL);
	BAD(wtio_sync_range(f, 1, LLONG_MAX, WTIO_SYNC_RANGE_WRITE), -EINVAL);
	/* As the kernel: a range that does not overflow is valid, even one
	 * past any data wtio can hold. */
	BAD(wtio_sync_range(f, LLONG_MAX, 0, WTIO_SYNC_RANGE_WRITE), 0);
	BAD(wtio_sync_range(f, LLONG_MAX - 1, 1, WTIO_SYNC_RANGE_WRITE), 0);
	BAD(wtio_sync_range(f, (off_t)1 << 62, 0, WTIO_SYNC_RANGE_WRITE |
			    WTIO_SYNC_RANGE_WAIT_AFTER), 0);
	BAD(wtio_sync_range(f, 0, LLONG_MAX, WTIO_SYNC_RANGE_WAIT_BEFORE |
			    WTIO_SYNC_RANGE_WRITE | WTIO_SYNC_RANGE_WAIT_AFTER),
	    0);

	/* iovcnt. */
	BAD(wtio_pwritev(f, &iov0, -1, 0, 0), -EINVAL);
	BAD(wtio_preadv(f, &iov0, -1, 0, 0), -EINVAL);
	BAD(wtio_pwritev(f, &iov0, IOV_MAX + 1, 0, 0), -EINVAL);
	BAD(wtio_pwritev(f, &iov0, 0, 0, 0), 0);

	/* Access modes. */
	ro = t_open(ctx, path, O_RDONLY);
	wo = t_open(ctx, path, O_WRONLY);
	BAD(wtio_pwrite(ro, buf, 10, 0, 0), -EBADF);
	BAD(wtio_pwritev(ro, &iov0, 1, 0, 0), -EBADF);
	BAD(wtio_ftruncate(ro, 0), -EBADF);
	BAD(wtio_pread(wo, buf, 10, 0, 0), -EBADF);
	BAD(wtio_preadv(wo, &iov0, 1, 0, 0), -EBADF);
	CHECK_EQ(wtio_pread(ro, buf, 10, 0, 0), 10);
	CHECK(memcmp(buf, shadow, 10) == 0);
	/* O_TRUNC on a read-only open is refused, not silently applied. */
	tmp = NULL;
	BAD(wtio_open(ctx, path, O_RDONLY | O_TRUNC, 0, 0, &tmp), -EINVAL);
	CHECK(tmp == NULL);

	/* A file already past wtio's largest size (a tmpfs one, whose own
	 * limit is the largest off_t) is not served: -EFBIG, nothing made. */
	{
		char big[] = "/dev/shm/wtio-bad-input-XXXXXX";
		int bfd = mkstemp(big);

		if (bfd >= 0 && ftruncate(bfd, ((off_t)1 << 62) + 4096) == 0) {
			tmp = NULL;
			ret_big = wtio_open(ctx, big, O_RDWR, 0, 0, &tmp);
			/* a tmpfs without O_DIRECT says so first */
			if (ret_big != -EOPNOTSUPP) {
				BAD(ret_big, -EFBIG);
				CHECK(tmp == NULL);
				big_checked = true;
			}
		}
		if (bfd >= 0) {
			close(bfd);
			unlink(big);
		}
	}

	/* Closed handle: the library keeps it, every call gets -EBADF. */
	dead = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_close(dead));
	BAD(wtio_pread(dead, buf, 10, 0, 0), -EBADF);
	BAD(wtio_pwrite(dead, buf, 10, 0, 0), -EBADF);
	BAD(wtio_fsync(dead), -EBADF);
	BAD(wtio_ftruncate(dead, 0), -EBADF);
	BAD(wtio_sync_range(dead, 0, 0, WTIO_SYNC_RANGE_WRITE), -EBADF);
	BAD(wtio_file_size(dead), -EBADF);
	BAD(wtio_close(dead), -EBADF);

	/* Context with open files. */
	BAD(wtio_ctx_destroy(ctx), -EBUSY);
	CHECK_EQ(wtio_pread(f, buf, 10, 0, 0), 10);	/* still alive */

	/* Bad configurations. */
	wtio_config_init(&cfg);
	cfg.folio_size = 3000;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.folio_size = 2048;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.folio_size = 2u << 20;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 15 * 4096;
	cfg.readahead_max = 4096;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	/* The smallest cache the header allows works with the defaults (the
	 * default readahead window shrinks to a quarter of it); an explicit
	 * window larger than a quarter is an error. */
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 16 * 4096;
	CHECK_OK(wtio_ctx_create(&cfg, &bad));
	CHECK_OK(wtio_ctx_destroy(bad));
	bad = NULL;
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 16 * 4096;
	cfg.readahead_max = 8 * 4096;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	/* 128 KiB is the default's value: taken as the default (a quarter
	 * of this cache), not refused; one block more is refused. */
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 16 * 4096;
	cfg.readahead_max = 128u << 10;
	CHECK_OK(wtio_ctx_create(&cfg, &bad));
	CHECK_OK(wtio_ctx_destroy(bad));
	bad = NULL;
	cfg.readahead_max = (128u << 10) + 4096;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.dirty_ratio = 91;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.dirty_ratio = 10;
	cfg.dirty_background_ratio = 20;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.backend = 99;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.backend = 3;	/* WTIO_BACKEND_FAULT until 0.1.0 */
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.reserved = &cfg;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	wtio_config_init(&cfg);
	/* The fault backend (the test library's) without a recorder. */
	BAD(wtio_fault_ctx_create(&cfg, NULL, &bad), -EINVAL);
	wtio_config_init(&cfg);
	cfg.flags = 1u << 20;
	BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
	/* The environment's switches: a value neither on nor off is
	 * refused, not read as off (WTIO_LARGE_FOLIOS=no left them on). */
	{
		static const char *const env[][2] = {
			{ "WTIO_LARGE_FOLIOS", "no" },
			{ "WTIO_LARGE_FOLIOS", "2" },
			{ "WTIO_IO_CHANNEL", "uring" },
			{ "WTIO_IO_CHANNEL", "AIO" },
		};
		unsigned int i;

		wtio_config_init(&cfg);
		for (i = 0; i < sizeof(env) / sizeof(env[0]); i++) {
			CHECK_OK(setenv(env[i][0], env[i][1], 1));
			BAD(wtio_ctx_create(&cfg, &bad), -EINVAL);
			/* empty: the configuration's own */
			CHECK_OK(setenv(env[i][0], "", 1));
			CHECK_OK(wtio_ctx_create(&cfg, &bad));
			CHECK_OK(wtio_ctx_destroy(bad));
			bad = NULL;
			CHECK_OK(unsetenv(env[i][0]));
		}
	}
	CHECK(bad == NULL);

	/* Nothing reached the disk either. */
	CHECK_OK(wtio_close(ro));
	CHECK_OK(wtio_close(wo));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, disk_before, LEN);
	CHECK_OK(wtio_ctx_destroy(ctx));
	if (!big_checked)
		printf("note: no tmpfs with O_DIRECT in /dev/shm: a file past "
		       "2^62 not tried\n");
	printf("bad_input: %d bad calls checked, content unchanged: PASS\n",
	       nr_checks);
	return T_EXIT_PASS;
}
