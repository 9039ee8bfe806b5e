/* SPDX-License-Identifier: MIT */
/*
 * test_large_overread.c - a read without the file lock whose span was
 * taken from a large folio size must not copy that span out of a small
 * folio found at the same index (review of WTIO_CONFIG_LARGE_FOLIOS).
 *
 * The read takes its span (64 KiB) from the file's folio size, then,
 * at the test point between span and lookup (WTIO_TP_HIT_SPAN), the
 * file is truncated to 0 and 4 KiB written at 0: its cache was empty,
 * so it now has 4 KiB folios, and the new folio 0 lands in the arena's
 * last unit (the cache is laid out for that: every other chunk full).
 * The lookup finds it, with the right inode and index and uptodate. A
 * copy of 64 KiB from it runs 60 KiB past the arena, into a PROT_NONE
 * page the test maps there: SIGSEGV. The read must instead fall back to
 * the locked path and return the file as it is then.
 */
#include <signal.h>
#include <sys/mman.h>

#include "helpers.h"
#include "ctx.h"
#include "inode.h"
#include "test_hooks.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

static struct wtio_file *tf;
static int fired;
static uint8_t *scratch;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	(void)f;
	if (tp != WTIO_TP_HIT_SPAN || fired++)
		return 0;
	/* In the reader's own thread, which holds no lock here. */
	memset(scratch, 0x5a, 4 * KIB);
	if (wtio_ftruncate(tf, 0) ||
	    wtio_pwrite(tf, scratch, 4 * KIB, 0, 0) != 4 * KIB) {
		fprintf(stderr, "FAIL: truncate and write in the hook\n");
		exit(T_EXIT_FAIL);
	}
	return 0;
}

static void fill(struct wtio_file *f, uint8_t seed, size_t len)
{
	uint8_t *b = t_malloc(len);

	memset(b, seed, len);
	CHECK_EQ(wtio_pwrite(f, b, len, 0, 0), (ssize_t)len);
	free(b);
}

int main(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *g, *h;
	uint8_t *buf = t_malloc(64 * KIB);
	const char *pf = t_tmpfile("ovr-f"), *pg = t_tmpfile("ovr-g"),
		   *ph = t_tmpfile("ovr-h");
	long page = sysconf(_SC_PAGESIZE);
	void *guard;
	ssize_t n;

	t_watchdog(60, "large overread");
	t_require_odirect();
	wtio_config_init(&cfg);
	cfg.cache_size = 4 * MIB;		/* 64 chunks of 64 KiB */
	cfg.folio_size = 4 * KIB;
	cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS | WTIO_CONFIG_NO_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK(ctx->chunk_units == 16 && ctx->nr_chunks == 64);
	guard = mmap(ctx->arena + ctx->arena_size, (size_t)page, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (guard != ctx->arena + ctx->arena_size) {
		if (guard != MAP_FAILED)
			munmap(guard, (size_t)page);
		t_skip("the page after the cache's arena is in use: no guard "
		       "page to catch a copy past its end");
	}
	scratch = t_malloc(4 * KIB);

	/* Chunks 0-61: file G's large folios (62 x 64 KiB, written in one
	 * go, clean after fsync). Chunk 62: file F's one large folio. */
	CHECK_OK(wtio_open(ctx, pg, O_RDWR, 0, 0, &g));
	fill(g, 1, 62 * 64 * KIB);
	CHECK_OK(wtio_fsync(g));
	CHECK_OK(wtio_open(ctx, pf, O_RDWR, 0, 0, &tf));
	fill(tf, 2, 64 * KIB);
	CHECK_OK(wtio_fsync(tf));
	CHECKF(atomic_load(&tf->inode->folio_size) == 64 * KIB,
	       "F's folio %u", atomic_load(&tf->inode->folio_size));
	/* Chunk 63: 15 small folios of H, its last unit left free. */
	CHECK_OK(wtio_open(ctx, ph, O_RDWR, 0, 0, &h));
	for (unsigned i = 0; i < 15; i++) {
		memset(scratch, (int)i, 4 * KIB);
		CHECK_EQ(wtio_pwrite(h, scratch, 4 * KIB, (off_t)i * 4 * KIB, 0),
			 4 * KIB);
	}
	CHECK_EQ(ctx->nr_free, 1);

	wtio_test_hook = hook;
	n = wtio_pread(tf, buf, 64 * KIB, 0, 0);
	wtio_test_hook = NULL;
	CHECKF(fired, "the read took the locked path at once: the layout "
	       "did not come about");
	CHECKF(atomic_load(&tf->inode->folio_size) == 4 * KIB,
	       "F's folio after the hook: %u",
	       atomic_load(&tf->inode->folio_size));
	CHECKF(n == 4 * KIB, "read returned %zd, want the new 4 KiB", n);
	memset(scratch, 0x5a, 4 * KIB);
	CHECK(!memcmp(buf, scratch, 4 * KIB));

	CHECK_OK(wtio_close(tf));
	CHECK_OK(wtio_close(g));
	CHECK_OK(wtio_close(h));
	CHECK_OK(wtio_ctx_destroy(ctx));
	munmap(guard, (size_t)page);
	free(buf);
	free(scratch);
	printf("PASS\n");
	return T_EXIT_PASS;
}
