/* SPDX-License-Identifier: MIT */
/*
 * test_evict_frozen.c - a walk over an inode's folios never takes a
 * reference on one whose eviction froze its count at 0.
 *
 * An eviction (CLOCK, drop-behind) holds the folio's lock, freezes its
 * count from 2 (the index's and its own) to 0, takes it out of the
 * index and the inode's list, and gives its own reference back. A walk
 * of the inode's list in that window (wtio_inode_collect: the space
 * regain after ENOSPC, truncate, the last close) used to take a plain
 * reference, 0 -> 1; the regain, which does not lock the folios it
 * collects, could drop it again, 1 -> 0, and free the folio under the
 * evictor (a review's stress test aborted with "unlock of an unlocked
 * folio" and "free folio with an odd seq"). This test links the library
 * built with test hooks and, at the frozen moment (WTIO_TP_EVICT_FROZEN),
 * walks the folio's inode as the regain does: the frozen folio must not
 * be among those collected, and the evictions must have happened (a
 * file read through a cache a quarter its size).
 *
 * And the last close of a file one of whose folios an eviction holds
 * frozen does not return (and free the inode) before that eviction has
 * taken the folio off the inode: it did, once the walk passed over
 * frozen folios without waiting (a review: ASan use-after-free in
 * folio_unhash). The hook holds the eviction up to 300 ms; the close
 * must come back after it.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "folio.h"
#include "inode.h"
#include "inode_folios.h"
#include "cache.h"
#include "test_hooks.h"

#define FS 4096u
#define NR_CACHE 64u

static _Atomic uint64_t frozen, collected_frozen, walks;
static __thread int in_hook;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	struct wtio_inode *inode;
	struct wtio_folio **v;
	uint64_t nr, i;

	if (tp != WTIO_TP_EVICT_FROZEN || in_hook)
		return 0;
	in_hook = 1;
	atomic_fetch_add(&frozen, 1);
	inode = atomic_load(&f->inode);
	v = wtio_inode_collect(inode, 0, &nr);
	if (v) {
		atomic_fetch_add(&walks, 1);
		for (i = 0; i < nr; i++)
			if (v[i] == f)
				atomic_fetch_add(&collected_frozen, 1);
		/* As resv_regain_cached drops them: without their locks. */
		wtio_folio_put_many(inode->ctx, v, (int)nr);
		free(v);
	}
	in_hook = 0;
	return 0;
}

static struct wtio_inode *_Atomic held_inode;
static _Atomic int held, closed, hook_done;
static struct wtio_file *reader_file;

static int hold_hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	int i;

	if (tp != WTIO_TP_EVICT_FROZEN || !held_inode ||
	    atomic_load(&f->inode) != held_inode || atomic_exchange(&held, 1))
		return 0;
	for (i = 0; i < 60 && !atomic_load(&closed); i++)
		usleep(5000);
	atomic_store(&hook_done, 1);
	return 0;
}

static void *reader(void *arg)
{
	const size_t len = (size_t)FS * NR_CACHE * 4;
	uint8_t *buf = t_malloc(len);
	int r;

	(void)arg;
	for (r = 0; r < 50 && !atomic_load(&held); r++)
		wtio_pread(reader_file, buf, len, 0, 0);
	free(buf);
	return NULL;
}

static void close_while_frozen(void)
{
	const size_t len = (size_t)FS * NR_CACHE * 4;
	const char *pa = t_tmpfile("evict-frozen-a");
	const char *pb = t_tmpfile("evict-frozen-b");
	uint8_t *data = t_malloc(len), one[FS];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *fa;
	pthread_t t;

	t_fill(data, len, 32, 0);
	t_write_disk(pa, data, FS);
	t_write_disk(pb, data, len);
	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = (uint64_t)FS * NR_CACHE;
	cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	ctx = t_ctx_create_or_skip(&cfg);
	fa = t_open(ctx, pa, O_RDONLY);
	reader_file = t_open(ctx, pb, O_RDONLY);
	CHECK_EQ(wtio_pread(fa, one, FS, 0, 0), (long long)FS);
	held_inode = fa->inode;
	wtio_test_hook = hold_hook;
	CHECK_OK(pthread_create(&t, NULL, reader, NULL));
	while (!atomic_load(&held))
		usleep(1000);
	CHECK_OK(wtio_close(fa));
	CHECKF(atomic_load(&hook_done),
	       "the last close returned while an eviction still held one of "
	       "its folios frozen");
	atomic_store(&closed, 1);
	CHECK_OK(pthread_join(t, NULL));
	wtio_test_hook = NULL;
	CHECK_OK(wtio_close(reader_file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(pa);
	unlink(pb);
	free(data);
	printf("  the last close waits for an eviction frozen on its folio: ok\n");
}

int main(void)
{
	const size_t len = (size_t)FS * NR_CACHE * 4;
	const char *path = t_tmpfile("evict-frozen");
	uint8_t *data = t_malloc(len), *buf = t_malloc(len);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;

	t_require_odirect();
	t_fill(data, len, 31, 0);
	t_write_disk(path, data, len);
	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = (uint64_t)FS * NR_CACHE;
	ctx = t_ctx_create_or_skip(&cfg);
	f = t_open(ctx, path, O_RDONLY);
	wtio_test_hook = hook;
	CHECK_EQ(wtio_pread(f, buf, len, 0, 0), (long long)len);
	CHECK_EQ(wtio_pread(f, buf, len, 0, 0), (long long)len);
	wtio_test_hook = NULL;
	CHECK(memcmp(buf, data, len) == 0);
	printf("  %llu evictions frozen, %llu walks of the inode's folios in "
	       "the window, the frozen folio collected %llu times\n",
	       (unsigned long long)frozen, (unsigned long long)walks,
	       (unsigned long long)collected_frozen);
	CHECKF(frozen >= NR_CACHE && walks >= NR_CACHE,
	       "too few evictions to test (%llu)", (unsigned long long)frozen);
	CHECKF(collected_frozen == 0,
	       "a walk took a reference on a folio frozen for eviction");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	free(data);
	free(buf);
	close_while_frozen();
	printf("evict_frozen: PASS\n");
	return T_EXIT_PASS;
}
