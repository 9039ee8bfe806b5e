/* SPDX-License-Identifier: MIT */
/*
 * test_wt_durable - a WTIO_WRITETHROUGH write's data is on disk (read back
 * with a separate O_DIRECT descriptor) when the call returns, for aligned
 * and unaligned ranges and 4K/64K folios; no dirty folios remain; a folio
 * dirtied by a write-back write and partly overwritten by a write-through
 * write is written whole and becomes clean.
 */
#include "helpers.h"

#define FSIZE (1024 * 1024)

static uint64_t dirty(struct wtio_ctx *ctx)
{
	struct wtio_stats st;

	CHECK_OK(wtio_stats(ctx, &st));
	return st.dirty_folios;
}

/* Disk must hold shadow[0..len) (disk may be longer: block rounding). */
static void check_disk_prefix(const char *path, const uint8_t *shadow,
			      size_t len, const char *what)
{
	size_t dlen;
	uint8_t *d = t_read_disk(path, &dlen);
	long long at;

	CHECKF(dlen >= len, "%s: disk size %zu < %zu", what, dlen, len);
	at = t_memdiff(d, shadow, len);
	CHECKF(at < 0, "%s: disk differs at %lld (disk %02x want %02x)", what,
	       at, at < 0 ? 0 : d[at], at < 0 ? 0 : shadow[at]);
	free(d);
}

static void run(uint32_t folio)
{
	static const struct { off_t off; size_t len; } w[] = {
		{ 0, 4096 }, { 4096, 65536 }, { 100, 1 }, { 4095, 2 },
		{ 12345, 54321 }, { 65536 - 7, 300 }, { 131072, 131072 },
		{ 500000, 3 }, { 700001, 200000 }, { 4096 * 3 + 512, 512 },
	};
	const char *path = t_tmpfile("wtdur");
	struct wtio_ctx *ctx = t_ctx(folio, (4u << 20) / folio, WTIO_BACKEND_AUTO);
	uint8_t *shadow = t_malloc(FSIZE + 65536);
	uint8_t *buf = t_malloc(FSIZE);
	struct wtio_file *f;
	size_t size = FSIZE;
	unsigned int i;

	/* The file starts with known content on disk. */
	t_fill(shadow, FSIZE, 1, 0);
	t_write_disk(path, shadow, FSIZE);

	f = t_open(ctx, path, O_RDWR);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		t_fill(buf, w[i].len, 100 + i, w[i].off);
		CHECK_EQ(wtio_pwrite(f, buf, w[i].len, w[i].off,
				     WTIO_WRITETHROUGH), w[i].len);
		memcpy(shadow + w[i].off, buf, w[i].len);
		check_disk_prefix(path, shadow, size, "overwrite");
		CHECKF(dirty(ctx) == 0, "dirty folios after write-through");
		t_check_wtio_range(f, shadow, size, w[i].off, w[i].len);
	}
	printf("folio %u: %u aligned/unaligned overwrites on disk at return\n",
	       folio, i);

	/* Extending, unaligned. */
	t_fill(buf, 10000, 200, size + 1000);
	memset(shadow + size, 0, 1000);
	CHECK_EQ(wtio_pwrite(f, buf, 10000, size + 1000, WTIO_WRITETHROUGH),
		 10000);
	memcpy(shadow + size + 1000, buf, 10000);
	size += 11000;
	check_disk_prefix(path, shadow, size, "extending");
	CHECK(dirty(ctx) == 0);
	CHECK_EQ(wtio_file_size(f), size);
	t_check_wtio_range(f, shadow, size, 0, size);
	printf("folio %u: extending write-through on disk at return\n", folio);

	/* Write-back dirt in a folio, then write-through to another part
	 * of it: the whole folio reaches the disk and is clean. */
	{
		off_t base = 5 * (off_t)folio;
		off_t wb_off = base + 10, wt_off = base + folio / 2 + 3;
		uint64_t d0 = dirty(ctx);

		t_fill(buf, 100, 300, wb_off);
		CHECK_EQ(wtio_pwrite(f, buf, 100, wb_off, 0), 100);
		memcpy(shadow + wb_off, buf, 100);
		CHECKF(dirty(ctx) == d0 + 1, "dirty %llu want %llu",
		       (unsigned long long)dirty(ctx),
		       (unsigned long long)d0 + 1);
		t_fill(buf, 200, 301, wt_off);
		CHECK_EQ(wtio_pwrite(f, buf, 200, wt_off, WTIO_WRITETHROUGH),
			 200);
		memcpy(shadow + wt_off, buf, 200);
		CHECKF(dirty(ctx) == 0, "folio still dirty after write-through");
		check_disk_prefix(path, shadow, size, "dirty folio written whole");
		t_check_wtio_range(f, shadow, size, base, folio);
	}
	printf("folio %u: write-back bytes of a dirty folio reach disk with "
	       "write-through, folio clean\n", folio);

	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, shadow, size);
	free(shadow);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	run(4096);
	run(65536);
	printf("PASS\n");
	return T_EXIT_PASS;
}
