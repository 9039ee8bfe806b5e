/* SPDX-License-Identifier: MIT */
/*
 * test_read_unlocked.c - cache hits are copied without the folio lock and
 * checked afterwards (read_hit_unlocked). This test races such reads
 * against everything that may change a folio under them: writers
 * rewriting records (write-back and NOSERIAL write-through), and a
 * churn thread whose reads of another file force eviction and reuse of
 * folios in a budget of 32. Every 8-byte word of a 4 KiB record carries
 * (generation, record number): a reader that copied from a folio reused
 * for another record sees a wrong record number, one torn by a writer
 * sees two generations, and one served stale data sees a generation
 * older than a write that had returned before the read began.
 * An alarm fails the test if anything hangs.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define REC 4096u
#define NR_REC 64u
#define NW 2
#define NREADERS 2
#define WOPS 1500
#define ROPS 20000

static struct wtio_file *file, *other;
static _Atomic uint64_t done_gen[NR_REC];	/* newest write that returned */
static _Atomic int writers_left = NW;
static _Atomic uint64_t reads_checked;

static uint64_t word(uint64_t gen, uint64_t rec)
{
	return (gen << 16) | rec;
}

static void *writer(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg, seed = id + 1;
	unsigned int flags = id ? WTIO_WRITETHROUGH | WTIO_NOSERIAL : 0;
	uint64_t *buf = aligned_alloc(4096, REC);
	int i;

	CHECK(buf);
	for (i = 0; i < WOPS; i++) {
		/* Each writer owns every NW-th record, so generations of a
		 * record only grow. */
		uint64_t rec = (rand_r(&seed) % (NR_REC / NW)) * NW + id;
		uint64_t gen = atomic_load(&done_gen[rec]) + 1;
		unsigned int k;

		for (k = 0; k < REC / 8; k++)
			buf[k] = word(gen, rec);
		CHECK_EQ(wtio_pwrite(file, buf, REC, (off_t)(rec * REC), flags),
			 REC);
		atomic_store(&done_gen[rec], gen);
	}
	free(buf);
	atomic_fetch_sub(&writers_left, 1);
	return NULL;
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u;
	uint64_t *buf = malloc(2 * REC);
	int i;

	CHECK(buf);
	for (i = 0; i < ROPS || atomic_load(&writers_left); i++) {
		uint64_t rec = rand_r(&seed) % (NR_REC - 1);
		uint64_t floor0 = atomic_load(&done_gen[rec]);
		uint64_t floor1 = atomic_load(&done_gen[rec + 1]);
		unsigned int r, k;

		/* Two records in one call: two folios at 4 KiB. */
		CHECK_EQ(wtio_pread(file, buf, 2 * REC, (off_t)(rec * REC), 0),
			 2 * REC);
		for (r = 0; r < 2; r++) {
			uint64_t *p = buf + r * (REC / 8);
			uint64_t want_rec = rec + r;
			uint64_t floor = r ? floor1 : floor0;

			for (k = 1; k < REC / 8; k++)
				CHECKF(p[k] == p[0], "record %llu torn: word %u is "
				       "%#llx, word 0 %#llx",
				       (unsigned long long)want_rec, k,
				       (unsigned long long)p[k],
				       (unsigned long long)p[0]);
			CHECKF((p[0] & 0xffff) == want_rec, "record %llu holds "
			       "record %llu's data", (unsigned long long)want_rec,
			       (unsigned long long)(p[0] & 0xffff));
			CHECKF((p[0] >> 16) >= floor, "record %llu: generation "
			       "%llu read after %llu had returned",
			       (unsigned long long)want_rec,
			       (unsigned long long)(p[0] >> 16),
			       (unsigned long long)floor);
		}
		atomic_fetch_add(&reads_checked, 1);
	}
	free(buf);
	return NULL;
}

/* Reads of another file: evicts this file's clean folios and hands the
 * slots to the other file, under the readers' feet. */
static void *churn(void *arg)
{
	char *buf = malloc(4 * REC);
	unsigned int seed = 99;

	(void)arg;
	CHECK(buf);
	while (atomic_load(&writers_left)) {
		off_t off = (off_t)(rand_r(&seed) % (NR_REC - 4)) * REC;

		CHECK(wtio_pread(other, buf, 4 * REC, off, 0) == 4 * REC);
	}
	free(buf);
	return NULL;
}

static void run(const char *path, const char *opath, uint32_t folio_size)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	pthread_t w[NW], r[NREADERS], c;
	uint64_t *buf = aligned_alloc(4096, REC);
	unsigned int i, k;

	CHECK(buf);
	wtio_config_init(&cfg);
	cfg.folio_size = folio_size;
	cfg.cache_size = 32ull * folio_size;
	cfg.readahead_max = 8 * folio_size;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &file));
	CHECK_OK(wtio_open(ctx, opath, O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &other));
	for (i = 0; i < NR_REC; i++) {
		atomic_store(&done_gen[i], 1);
		for (k = 0; k < REC / 8; k++)
			buf[k] = word(1, i);
		CHECK_EQ(wtio_pwrite(file, buf, REC, (off_t)(i * REC), 0), REC);
		CHECK_EQ(wtio_pwrite(other, buf, REC, (off_t)(i * REC), 0), REC);
	}
	CHECK_OK(wtio_fsync(file));
	CHECK_OK(wtio_fsync(other));
	atomic_store(&writers_left, NW);
	for (i = 0; i < NW; i++)
		CHECK_OK(pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)i));
	for (i = 0; i < NREADERS; i++)
		CHECK_OK(pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 1)));
	CHECK_OK(pthread_create(&c, NULL, churn, NULL));
	for (i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	for (i = 0; i < NREADERS; i++)
		pthread_join(r[i], NULL);
	pthread_join(c, NULL);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_close(other));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
}

int main(void)
{
	char path[64], opath[64];

	alarm(240);
	snprintf(path, sizeof(path), "read_unlocked.%d", (int)getpid());
	snprintf(opath, sizeof(opath), "read_unlocked.%d.other", (int)getpid());
	run(path, opath, 4096);
	run(path, opath, 16384);
	unlink(path);
	unlink(opath);
	printf("PASS: %llu reads of two records each, never torn, misplaced "
	       "or stale, under writers and eviction\n",
	       (unsigned long long)atomic_load(&reads_checked));
	return T_EXIT_PASS;
}
