/* SPDX-License-Identifier: MIT */
/*
 * test_truncate_vs_dio.c - setting the file's size while write-back is
 * appending past the backing file's end loses nothing.
 *
 * What rsync --append does: open a file, append tens of MiB through a
 * cache much larger than the backing file, ftruncate to the size it
 * already has, close. The flushers' 1 MiB direct writes past the backing
 * file's end are in flight when the ftruncate extends the backing file,
 * and XFS zeroes from the size it read before waiting for direct I/O:
 * on XFS, before wtio held such writes back around every size change,
 * three runs in four ended with an aligned 1 MiB of zeros. Each round
 * here checks every byte on disk (O_DIRECT) after close. Needs XFS on a
 * loop device (root); skips with the reason otherwise.
 */
#include "helpers.h"
#include "xfs_loop.h"

#define PREFIX 10000000ull		/* not block aligned, like rsync's */
#define TOTAL (48ull << 20)
#define CHUNK (256u << 10)
#define ROUNDS 4

static unsigned char byte_at(uint64_t off, unsigned int round)
{
	uint64_t x = (off / 8 + 1) * 0x9e3779b97f4a7c15ull + round;

	x ^= x >> 29;
	return (unsigned char)(x >> (8 * (off % 8)));
}

static void fill(unsigned char *buf, uint64_t off, size_t len,
		 unsigned int round)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = byte_at(off + i, round);
}

static void one_round(const char *path, unsigned int round, int variant)
{
	static unsigned char buf[CHUNK];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint64_t off;
	int fd;

	/* The prefix through the kernel, as the earlier transfer left it. */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	for (off = 0; off < PREFIX; off += CHUNK) {
		size_t n = PREFIX - off < CHUNK ? PREFIX - off : CHUNK;

		fill(buf, off, n, round);
		CHECK_EQ(pwrite(fd, buf, n, (off_t)off), (long long)n);
	}
	CHECK_OK(fsync(fd));
	CHECK_OK(close(fd));

	wtio_config_init(&cfg);
	cfg.cache_size = 128ull << 20;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_WRONLY, 0, 0, &f));
	CHECK_EQ(wtio_file_size(f), (long long)PREFIX);
	for (off = PREFIX; off < TOTAL; off += CHUNK) {
		size_t n = TOTAL - off < CHUNK ? TOTAL - off : CHUNK;

		fill(buf, off, n, round);
		CHECK_EQ(wtio_pwrite(f, buf, n, (off_t)off, 0), (long long)n);
	}
	if (variant == 0)
		CHECK_OK(wtio_ftruncate(f, (off_t)TOTAL));	/* same size */
	else
		CHECK_OK(wtio_ftruncate(f, (off_t)TOTAL + 12345));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));

	/* Every byte, from the disk. */
	uint64_t want_size = TOTAL + (variant ? 12345 : 0);
	unsigned char *rd = aligned_alloc(4096, CHUNK);
	struct stat st;

	CHECK(rd);
	fd = open(path, O_RDONLY | O_DIRECT);
	CHECK(fd >= 0);
	CHECK_OK(fstat(fd, &st));
	CHECKF((uint64_t)st.st_size == want_size, "round %u: size %lld, "
	       "want %llu", round, (long long)st.st_size,
	       (unsigned long long)want_size);
	for (off = 0; off < want_size; off += CHUNK) {
		ssize_t got = pread(fd, rd, CHUNK, (off_t)off);
		size_t n = want_size - off < CHUNK ? want_size - off : CHUNK;

		CHECK_EQ(got, (long long)n);
		for (size_t i = 0; i < n; i++) {
			unsigned char want = off + i < TOTAL ?
					     byte_at(off + i, round) : 0;

			CHECKF(rd[i] == want, "round %u: byte %llu is %#x, "
			       "want %#x (the 1 MiB it starts may be zeros)",
			       round, (unsigned long long)(off + i), rd[i], want);
		}
	}
	CHECK_OK(close(fd));
	free(rd);
}

int main(void)
{
	char path[512];
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	ret = xl_setup("truncdio", "");
	if (ret == XL_SKIP)
		t_skip("%s", xl.why);
	CHECKF(ret == XL_OK, "%s", xl.why);
	xl_path(path, sizeof(path), "append");
	for (unsigned int r = 0; r < ROUNDS; r++) {
		one_round(path, r, (int)(r % 2));
		printf("round %u: %s ftruncate after appending %llu MiB: "
		       "every byte on disk\n", r, r % 2 ? "extending" :
		       "same-size", (unsigned long long)((TOTAL - PREFIX) >> 20));
	}
	unlink(path);
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	printf("PASS\n");
	return T_EXIT_PASS;
}
