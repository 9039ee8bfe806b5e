/* SPDX-License-Identifier: MIT */
/*
 * test_concurrent_rw.c - 4 writers and 4 readers on one file. Each writer
 * owns a stripe of 4 KiB records (record % 4 == writer) and rewrites them
 * whole with one aligned pwrite; every 8-byte word of a record carries
 * (writer tag, generation, record number). Writers verify their own data
 * on read-back; readers read random ranges and check that every record is
 * internally consistent: one writer's tag and one generation (a write is
 * done under the exclusive lock, a read under the shared one, so a mix
 * means a torn read). Folio sizes 4K and 64K, small and large budgets.
 * An alarm fails the test if anything hangs.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "helpers.h"

#define REC 4096u
#define NR_REC 512u
#define NW 4
#define NR 4
#define WOPS 1500
#define ROPS 1500

static struct wtio_file *file;
static _Atomic uint64_t last_gen[NR_REC];	/* what a writer last wrote */
static _Atomic uint64_t reads_checked, records_checked, writes_done;

static uint64_t word(uint64_t tag, uint64_t gen, uint64_t rec)
{
	return (tag << 56) | ((gen & 0xffffffffffull) << 16) | rec;
}

static void fill_rec(uint64_t *p, uint64_t tag, uint64_t gen, uint64_t rec)
{
	uint64_t v = word(tag, gen, rec);
	unsigned i;

	for (i = 0; i < REC / 8; i++)
		p[i] = v;
}

/* Check one record's words (p may be unaligned); returns the common
 * word. */
static uint64_t check_rec(const void *rp, uint64_t rec)
{
	uint64_t p[REC / 8];
	uint64_t v;
	unsigned i;

	memcpy(p, rp, REC);
	v = p[0];

	CHECKF((v & 0xffff) == rec, "record %llu holds record %llu's data",
	       (unsigned long long)rec, (unsigned long long)(v & 0xffff));
	for (i = 1; i < REC / 8; i++)
		CHECKF(p[i] == v, "torn record %llu: word 0 %016llx word %u %016llx",
		       (unsigned long long)rec, (unsigned long long)v, i,
		       (unsigned long long)p[i]);
	return v;
}

static void *writer(void *arg)
{
	uint64_t w = (uint64_t)(uintptr_t)arg;
	struct t_rng r = { 1000 + w };
	uint64_t *buf = t_malloc(REC), *rb = t_malloc(REC);
	int i;

	for (i = 0; i < WOPS; i++) {
		uint64_t rec = w + NW * t_rand_below(&r, NR_REC / NW);
		uint64_t gen = atomic_load(&last_gen[rec]) + 1;

		fill_rec(buf, w + 1, gen, rec);
		CHECK_EQ(wtio_pwrite(file, buf, REC, (off_t)(rec * REC), 0), REC);
		atomic_store(&last_gen[rec], gen);
		atomic_fetch_add(&writes_done, 1);
		if (t_rand_below(&r, 4) == 0) {
			/* Own stripe: nobody else writes it. */
			CHECK_EQ(wtio_pread(file, rb, REC, (off_t)(rec * REC), 0),
				 REC);
			CHECK(memcmp(rb, buf, REC) == 0);
		}
		if (t_rand_below(&r, 300) == 0)
			CHECK_OK(wtio_fsync(file));
	}
	free(buf);
	free(rb);
	return NULL;
}

static void *reader(void *arg)
{
	uint64_t id = (uint64_t)(uintptr_t)arg;
	struct t_rng r = { 2000 + id };
	uint64_t *buf = t_malloc(8 * REC + 8192);
	int i;

	for (i = 0; i < ROPS; i++) {
		uint64_t first = t_rand_below(&r, NR_REC);
		uint64_t nrec = 1 + t_rand_below(&r, 8);
		uint64_t k;
		off_t off;
		size_t len;
		char *p = (char *)buf;

		if (first + nrec > NR_REC)
			nrec = NR_REC - first;
		/* Sometimes start and end mid-record; only whole records
		 * inside the range are checked. */
		off = (off_t)(first * REC);
		len = nrec * REC;
		if (t_rand_below(&r, 3) == 0 && first > 0) {
			off -= 100;
			len += 100 + 300;
			p += 100;
		}
		if ((uint64_t)off + len > NR_REC * REC)
			len = NR_REC * REC - (uint64_t)off;
		CHECK_EQ(wtio_pread(file, buf, len, off, 0), (long long)len);
		for (k = 0; k < nrec; k++) {
			uint64_t v = check_rec(p + k * REC,
					       first + k);
			uint64_t tag = v >> 56;

			/* Initial data (tag 0xff) or the owner's. */
			CHECKF(tag == 0xff || tag == (first + k) % NW + 1,
			       "record %llu written by tag %llu",
			       (unsigned long long)(first + k),
			       (unsigned long long)tag);
			atomic_fetch_add(&records_checked, 1);
		}
		atomic_fetch_add(&reads_checked, 1);
	}
	free(buf);
	return NULL;
}

static void run(uint32_t fs, uint64_t budget)
{
	struct wtio_ctx *ctx = t_ctx(fs, budget, WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("concurrent");
	pthread_t th[NW + NR];
	uint64_t *buf = t_malloc(REC);
	uint64_t rec;
	struct wtio_stats st;
	size_t dlen;
	uint8_t *d;
	int i;

	file = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	for (rec = 0; rec < NR_REC; rec++) {
		fill_rec(buf, 0xff, 0, rec);
		CHECK_EQ(wtio_pwrite(file, buf, REC, (off_t)(rec * REC), 0), REC);
		atomic_store(&last_gen[rec], 0);
	}
	for (i = 0; i < NW; i++)
		CHECK_OK(pthread_create(&th[i], NULL, writer, (void *)(uintptr_t)i));
	for (i = 0; i < NR; i++)
		CHECK_OK(pthread_create(&th[NW + i], NULL, reader,
					(void *)(uintptr_t)i));
	for (i = 0; i < NW + NR; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK(st.cached_folios <= st.total_folios);
	/* Final content: every record holds its last write. */
	CHECK_OK(wtio_close(file));
	d = t_read_disk(path, &dlen);
	CHECK_EQ(dlen, NR_REC * REC);
	for (rec = 0; rec < NR_REC; rec++) {
		uint64_t v = check_rec(d + rec * REC, rec);
		uint64_t g = atomic_load(&last_gen[rec]);

		CHECKF(v == word(g ? rec % NW + 1 : 0xff, g, rec),
		       "record %llu on disk %016llx, want gen %llu",
		       (unsigned long long)rec, (unsigned long long)v,
		       (unsigned long long)g);
	}
	free(d);
	printf("  folio %u budget %llu: evictions %llu throttle_waits %llu\n",
	       fs, (unsigned long long)budget,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.throttle_waits);
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	t_watchdog(240, "FAIL: concurrent_rw hung (watchdog)\n");
	run(4096, 32);
	run(4096, 4096);
	run(65536, 16);
	run(65536, 256);
	printf("concurrent_rw: %llu writes, %llu reads, %llu records checked: PASS\n",
	       (unsigned long long)writes_done,
	       (unsigned long long)reads_checked,
	       (unsigned long long)records_checked);
	return T_EXIT_PASS;
}
