/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_fake.c - the space reservation's decisions, with the
 * library's fallocate calls answered by this program (it links the static
 * library, so its fallocate is the one wtio calls):
 *
 *  - a filesystem without fallocate (EOPNOTSUPP): writes are accepted as
 *    before, and wtio stops asking after the first refusal;
 *  - a filesystem with room up to a limit: a write crossing it returns
 *    the short count of what fits (to the block), the next one -ENOSPC,
 *    nothing of the refused part is in the cache or on disk, and fsync
 *    reports nothing;
 *  - appends ask once per chunk ahead, not once per write, and overwrites
 *    of an existing file never ask.
 */
#include <dlfcn.h>
#include <stdarg.h>

#include "helpers.h"

static int fake_mode;		/* 0: pass through, 1: EOPNOTSUPP, 2: limit */
static int64_t fake_limit;
static int fake_calls, fake_punches;

int fallocate(int fd, int mode, off_t off, off_t len)
{
	static int (*real)(int, int, off_t, off_t);

	fake_calls++;
	if (mode & FALLOC_FL_PUNCH_HOLE)
		fake_punches++;
	if (fake_mode == 1) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (fake_mode == 2 && !(mode & FALLOC_FL_PUNCH_HOLE) &&
	    off + len > fake_limit) {
		errno = ENOSPC;
		return -1;
	}
	if (!real)
		real = (int (*)(int, int, off_t, off_t))dlsym(RTLD_NEXT,
							      "fallocate");
	return real(fd, mode, off, len);
}

static void test_unsupported(uint32_t fs)
{
	struct wtio_ctx *ctx = t_ctx(fs, 64, WTIO_BACKEND_PSYNC);
	const char *path = t_tmpfile("nofalloc");
	const size_t len = 1 << 20;
	uint8_t *data = t_malloc(len);
	struct wtio_file *f;
	size_t off;

	fake_mode = 1;
	fake_calls = 0;
	t_fill(data, len, 41, 0);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	for (off = 0; off < len; off += 10000) {
		size_t n = len - off < 10000 ? len - off : 10000;

		CHECK_EQ(wtio_pwrite(f, data + off, n, (off_t)off, 0),
			 (long long)n);
	}
	CHECK_EQ(fake_calls, 1);	/* asked once, then no more */
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_ctx_destroy(ctx));
	fake_mode = 0;
	free(data);
	printf("  folio %u: no fallocate: writes accepted as before, asked once: ok\n",
	       fs);
}

static void test_limit(uint32_t fs)
{
	struct wtio_ctx *ctx = t_ctx(fs, 64, WTIO_BACKEND_PSYNC);
	const char *path = t_tmpfile("limit");
	const int64_t limit = 300000;
	const size_t len = 1 << 20;
	uint8_t *data = t_malloc(len), *buf = t_malloc(len);
	struct wtio_file *f;
	ssize_t n, m;

	fake_mode = 2;
	fake_limit = limit;
	t_fill(data, len, 42, 0);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	n = wtio_pwrite(f, data, len, 0, 0);
	/* What fits, to the reservation granule below the limit. */
	CHECKF(n > 0 && n <= limit && n > limit - 65536,
	       "write across the limit: %zd", n);
	m = wtio_pwrite(f, data + n, len - (size_t)n, n, 0);
	CHECKF(m == -ENOSPC || (m > 0 && n + m <= limit),
	       "write after the short one: %zd", m);
	if (m > 0) {
		n += m;
		CHECK_EQ(wtio_pwrite(f, data + n, len - (size_t)n, n, 0),
			 -ENOSPC);
	}
	CHECK_EQ(wtio_file_size(f), n);
	CHECK_EQ(wtio_pread(f, buf, len, 0, 0), n);
	CHECK(memcmp(buf, data, (size_t)n) == 0);
	/* Nothing false: every acknowledged byte has its space. */
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, data, (size_t)n);
	CHECK_OK(wtio_ctx_destroy(ctx));
	fake_mode = 0;
	free(data);
	free(buf);
	printf("  folio %u: room for %lld bytes: a 1 MiB write returns %zd, then -ENOSPC; fsync 0: ok\n",
	       fs, (long long)limit, n);
}

static void test_calls(uint32_t fs)
{
	struct wtio_ctx *ctx = t_ctx(fs, 256, WTIO_BACKEND_PSYNC);
	const char *path = t_tmpfile("calls");
	const size_t len = 8 << 20;
	uint8_t *data = t_malloc(len);
	struct wtio_file *f;
	size_t off;
	int appends;

	t_fill(data, len, 43, 0);
	fake_calls = fake_punches = 0;
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	for (off = 0; off < len; off += 4096)
		CHECK_EQ(wtio_pwrite(f, data + off, 4096, (off_t)off, 0), 4096);
	appends = fake_calls;
	CHECKF(appends >= 1 && appends <= 16,
	       "%d fallocate calls for 2048 appends of 4 KiB", appends);
	CHECK_OK(wtio_close(f));
	CHECKF(fake_punches <= 1, "%d punches at close", fake_punches);
	t_check_disk_equals(path, data, len);

	/* An existing file: overwrites inside its data never ask. */
	f = t_open(ctx, path, O_RDWR);
	fake_calls = 0;
	for (off = 0; off < len; off += 65536 + 4096)
		CHECK_EQ(wtio_pwrite(f, data + off, 100, (off_t)off, 0), 100);
	CHECK_EQ(fake_calls, 0);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(data);
	printf("  folio %u: 2048 appends: %d fallocate calls; overwrites: none: ok\n",
	       fs, appends);
}

int main(void)
{
	t_require_odirect();
	test_limit(4096);
	test_limit(65536);
	test_unsupported(4096);
	test_unsupported(65536);
	test_calls(4096);
	test_calls(65536);
	printf("enospc_fake: PASS\n");
	return T_EXIT_PASS;
}
