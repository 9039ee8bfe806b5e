/* SPDX-License-Identifier: MIT */
/*
 * test_slot_chunks.c - the inode's slot chunks go back to the context's
 * pool when their last folio leaves (docs/DESIGN.md, "The inode's
 * slots"): a stream several times longer than the pool's chunks cover
 * (the pool holds twice what a dense cache needs) still finds its cached
 * folios through its slots at the end, for one file and then for a
 * second one read after it; the bytes are right throughout. Before,
 * chunks were given back only with the inode, the pool ran dry half way
 * and every later hit went through the hash.
 */
#include <stdatomic.h>

#include "helpers.h"
#include "folio.h"
#include "test_hooks.h"

#define FOLIO	4096u
#define NR	256u			/* 1 MiB of cache: a 17-chunk pool */
#define SIZE	(40u << 20)		/* 20 chunks' worth of folios */
#define PIECE	(64u << 10)
#define TAIL	(64u << 10)

static _Atomic uint64_t slot_hits, slot_stale;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	(void)f;
	if (tp == WTIO_TP_SLOT_HIT)
		atomic_fetch_add_explicit(&slot_hits, 1, memory_order_relaxed);
	else if (tp == WTIO_TP_SLOT_STALE)
		atomic_fetch_add_explicit(&slot_stale, 1, memory_order_relaxed);
	return 0;
}

/* Stream the file, then read its last TAIL (cached) again: how many of
 * those hits came through a slot. */
static uint64_t stream(struct wtio_ctx *ctx, const char *path,
		       const uint8_t *data, uint8_t *buf)
{
	struct wtio_file *f = t_open(ctx, path, O_RDONLY);
	struct wtio_stats a, b;
	uint64_t before;
	size_t off;

	for (off = 0; off < SIZE; off += PIECE) {
		CHECK_EQ(wtio_pread(f, buf, PIECE, (off_t)off, 0), PIECE);
		CHECKF(memcmp(buf, data + off, PIECE) == 0, "bad data at %zu",
		       off);
	}
	a = t_stats(ctx);
	before = atomic_load(&slot_hits);
	CHECK_EQ(wtio_pread(f, buf, TAIL, SIZE - TAIL, 0), TAIL);
	CHECK(memcmp(buf, data + SIZE - TAIL, TAIL) == 0);
	b = t_stats(ctx);
	CHECKF(b.misses == a.misses, "the tail was not cached: %llu misses",
	       (unsigned long long)(b.misses - a.misses));
	CHECK_OK(wtio_close(f));
	return atomic_load(&slot_hits) - before;
}

int main(void)
{
	uint8_t *data = t_malloc(SIZE), *buf = t_malloc(PIECE);
	const char *p1, *p2;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	uint64_t h1, h2;

	if (WTIO_TSAN)
		t_skip("the lockless hit is not compiled under ThreadSanitizer "
		       "(WTIO_TSAN): no slot is read");
	t_require_odirect();
	t_watchdog(120, "test_slot_chunks: hung\n");
	p1 = t_tmpfile("slot-chunks");
	p2 = t_tmpfile("slot-chunks2");
	t_fill(data, SIZE, 51, 0);
	t_write_disk(p1, data, SIZE);
	t_write_disk(p2, data, SIZE);
	wtio_test_hook = hook;
	wtio_config_init(&cfg);
	cfg.folio_size = FOLIO;
	cfg.cache_size = (uint64_t)FOLIO * NR;
	cfg.readahead_max = 64u << 10;
	ctx = t_ctx_create(&cfg);
	h1 = stream(ctx, p1, data, buf);
	h2 = stream(ctx, p2, data, buf);
	wtio_test_hook = NULL;
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("  tail hits through slots: %llu and %llu of %u (stale %llu)\n",
	       (unsigned long long)h1, (unsigned long long)h2, TAIL / FOLIO,
	       (unsigned long long)slot_stale);
	CHECKF(h1 >= TAIL / FOLIO && h2 >= TAIL / FOLIO,
	       "a stream of %u MiB through a %u KiB cache: its cached tail "
	       "found through slots %llu and %llu times of %u",
	       SIZE >> 20, NR * FOLIO >> 10, (unsigned long long)h1,
	       (unsigned long long)h2, TAIL / FOLIO);
	free(data);
	free(buf);
	printf("slot_chunks: PASS\n");
	return T_EXIT_PASS;
}
