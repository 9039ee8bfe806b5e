/* SPDX-License-Identifier: MIT */
/*
 * test_truncate.c - wtio_ftruncate down and up over clean cached, dirty
 * and partially dirty folios, for several folio sizes: bytes past the new
 * size read back as zeros after re-extension (by ftruncate or by a write),
 * the backing file's size equals the new size at once, and after fsync
 * and close.
 */
#include "helpers.h"

#define MAX (1u << 20)

static uint64_t checks;

struct state {
	struct wtio_file *f;
	const char *path;
	uint8_t *shadow;
	size_t size;
};

static void w(struct state *s, off_t off, size_t len, uint64_t seed)
{
	uint8_t *buf = t_malloc(len);

	t_fill(buf, len, seed, (uint64_t)off);
	CHECK_EQ(wtio_pwrite(s->f, buf, len, off, 0), (long long)len);
	memcpy(s->shadow + off, buf, len);
	if ((size_t)off + len > s->size)
		s->size = (size_t)off + len;
	free(buf);
}

static void trunc_to(struct state *s, size_t len)
{
	CHECK_OK(wtio_ftruncate(s->f, (off_t)len));
	if (len < s->size)
		memset(s->shadow + len, 0, s->size - len);
	s->size = len;
	CHECK_EQ(wtio_file_size(s->f), (long long)len);
	/* The backing file changes at once. */
	CHECK_EQ(t_disk_size(s->path), (long long)len);
	checks++;
}

static void verify(struct state *s)
{
	t_check_wtio_range(s->f, s->shadow, s->size, 0, s->size + 8192);
	checks++;
}

static void verify_disk_after_fsync(struct state *s)
{
	CHECK_OK(wtio_fsync(s->f));
	CHECK_EQ(t_disk_size(s->path), (long long)s->size);
	t_check_disk_equals(s->path, s->shadow, s->size);
	checks++;
}

static void run(uint32_t fs, uint64_t budget, uint64_t seed)
{
	struct wtio_ctx *ctx = t_ctx(fs, budget, WTIO_BACKEND_AUTO);
	struct state s = { .shadow = t_zalloc(MAX + 65536) };
	struct t_rng r = { seed };
	size_t cut;
	int round;

	s.path = t_tmpfile("truncate");
	s.f = t_open(ctx, s.path, O_RDWR | O_CREAT | O_TRUNC);

	/* Clean cached folios. */
	w(&s, 0, 600000, seed);
	verify_disk_after_fsync(&s);
	verify(&s);				/* now cached and clean */
	cut = 100000 + t_rand_below(&r, 50000);	/* unaligned */
	trunc_to(&s, cut);
	verify(&s);
	CHECK_EQ(wtio_pread(s.f, s.shadow + MAX, 10, (off_t)cut, 0), 0);
	trunc_to(&s, 600000);			/* grow: zeros */
	verify(&s);
	verify_disk_after_fsync(&s);

	/* Dirty folios (never written back). */
	w(&s, 0, 500000, seed + 1);
	cut = 1 + t_rand_below(&r, 400000);
	trunc_to(&s, cut);
	verify(&s);
	trunc_to(&s, 500000);
	verify(&s);
	verify_disk_after_fsync(&s);

	/* Partially dirty folios across the cut: clean data, then small
	 * dirty pieces before and after the truncation point. */
	for (round = 0; round < 8; round++) {
		size_t p = 4096 + t_rand_below(&r, 400000);

		w(&s, 0, 450000, seed + 10 + (uint64_t)round);
		verify_disk_after_fsync(&s);
		verify(&s);
		w(&s, (off_t)p - 700, 300, seed + 20 + (uint64_t)round);
		w(&s, (off_t)p + 5, 300, seed + 30 + (uint64_t)round);
		trunc_to(&s, p);
		verify(&s);
		/* Re-extend by a write beyond: the gap must be zeros. */
		w(&s, (off_t)p + 3 * fs + 17, 100, seed + 40 + (uint64_t)round);
		verify(&s);
		verify_disk_after_fsync(&s);
		/* And by ftruncate. */
		trunc_to(&s, p / 2 + 1);
		trunc_to(&s, p + 2 * fs);
		verify(&s);
		if (round & 1)
			verify_disk_after_fsync(&s);
	}

	/* To zero and back. */
	w(&s, 1000, 70000, seed + 50);
	trunc_to(&s, 0);
	verify(&s);
	w(&s, 0, 10, seed + 51);
	trunc_to(&s, 300000);
	verify(&s);
	CHECK_OK(wtio_close(s.f));
	CHECK_EQ(t_disk_size(s.path), (long long)s.size);
	t_check_disk_equals(s.path, s.shadow, s.size);
	checks++;
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(s.path);
	free(s.shadow);
}

int main(void)
{
	t_require_odirect();
	run(4096, 1024, 1);
	run(4096, 16, 2);
	run(16384, 256, 3);
	run(65536, 64, 4);
	run(65536, 16, 5);
	printf("truncate: %llu checks: PASS\n", (unsigned long long)checks);
	return T_EXIT_PASS;
}
