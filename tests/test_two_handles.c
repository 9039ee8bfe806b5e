/* SPDX-License-Identifier: MIT */
/*
 * test_two_handles.c - two wtio_open()s of one file in one context share
 * one cache: a write through one handle is read through the other at
 * once, without fsync, and nothing was read from disk for it; size and
 * truncation are shared; a third open by another name (hard link) is the
 * same file too. A second context has its own cache.
 */
#include "helpers.h"

int main(void)
{
	struct wtio_ctx *ctx;
	struct wtio_file *a, *b, *c;
	const char *path, *link_path;
	uint8_t data[70000], buf[70000];
	struct wtio_stats st0, st1;
	int i;

	t_require_odirect();
	ctx = t_ctx(4096, 256, WTIO_BACKEND_AUTO);
	path = t_tmpfile("two_handles");
	link_path = t_tmpfile("two_handles_link");
	unlink(link_path);
	CHECK_OK(link(path, link_path));

	a = t_open(ctx, path, O_RDWR);
	b = t_open(ctx, path, O_RDONLY);
	c = t_open(ctx, link_path, O_RDWR);
	for (i = 0; i < 20; i++) {
		size_t len = 1 + (size_t)i * 3001;
		off_t off = (off_t)i * 977;
		struct wtio_file *w = (i & 1) ? c : a;

		t_fill(data, len, 40 + (uint64_t)i, (uint64_t)off);
		CHECK_EQ(wtio_pwrite(w, data, len, off, 0), (long long)len);
		CHECK_OK(wtio_stats(ctx, &st0));
		memset(buf, 0, len);
		CHECK_EQ(wtio_pread(b, buf, len, off, 0), (long long)len);
		CHECK(memcmp(buf, data, len) == 0);
		CHECK_EQ(wtio_pread((i & 1) ? a : c, buf, len, off, 0),
			 (long long)len);
		CHECK(memcmp(buf, data, len) == 0);
		CHECK_OK(wtio_stats(ctx, &st1));
		/* Served from the shared cache, not from disk. */
		CHECK_EQ(st1.read_ios, st0.read_ios);
		CHECK_EQ(wtio_file_size(b), wtio_file_size(w));
	}
	/* Size changes are shared. */
	CHECK_OK(wtio_ftruncate(a, 12345));
	CHECK_EQ(wtio_file_size(b), 12345);
	CHECK_EQ(wtio_file_size(c), 12345);
	CHECK_EQ(wtio_pread(b, buf, sizeof(buf), 0, 0), 12345);

	/* Dirty data written through c is on disk after a's fsync (one
	 * cache, one inode). */
	t_fill(data, 5000, 99, 100);
	CHECK_EQ(wtio_pwrite(c, data, 5000, 100, 0), 5000);
	CHECK_OK(wtio_fsync(a));
	{
		size_t dlen;
		uint8_t *d = t_read_disk(path, &dlen);

		CHECK_EQ(dlen, 12345);
		CHECK(memcmp(d + 100, data, 5000) == 0);
		free(d);
	}
	/* Closing one handle leaves the others working. */
	CHECK_OK(wtio_close(a));
	CHECK_EQ(wtio_pread(b, buf, 5000, 100, 0), 5000);
	CHECK(memcmp(buf, data, 5000) == 0);
	CHECK_OK(wtio_close(c));
	CHECK_EQ(wtio_pread(b, buf, 5000, 100, 0), 5000);
	CHECK(memcmp(buf, data, 5000) == 0);
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(link_path);
	printf("two_handles: 20 cross-handle writes read back from the shared cache: PASS\n");
	return T_EXIT_PASS;
}
