/* SPDX-License-Identifier: MIT */
/*
 * test_dontcache_stream_mt.c - DONTCACHE streams through one handle from
 * several threads at once (src/dontcache_stream.c keeps one stream state
 * per handle, a hint read and written without a lock): 4 writers each
 * stream their own 3 MiB region in writes of 4-200 KiB, so the handle's
 * state flips between them and units start early, late or twice; a
 * reader checks what it reads against the bytes a writer has finished,
 * and a thread calls fsync now and then. At the end nothing is dirty or
 * cached, and the disk holds every byte. Suite concurrency (TSan).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define NW	4
#define REGION	(3u << 20)

static struct wtio_ctx *ctx;
static struct wtio_file *f;
static uint8_t *want;			/* the bytes every writer will write */
static _Atomic uint64_t done[NW];	/* bytes of its region written */
static atomic_bool stop;

static void *writer(void *arg)
{
	unsigned int w = (unsigned int)(uintptr_t)arg;
	uint64_t base = (uint64_t)w * REGION, at = 0;
	struct t_rng rng = { .s = 1000 + w };

	while (at < REGION) {
		size_t len = 4096 + (size_t)t_rand_below(&rng, 200 * 1024);
		ssize_t n;

		if (len > REGION - at)
			len = REGION - at;
		n = wtio_pwrite(f, want + base + at, len, (off_t)(base + at),
				WTIO_DONTCACHE);
		CHECKF(n == (ssize_t)len, "writer %u: %zd of %zu at %llu", w,
		       n, len, (unsigned long long)(base + at));
		at += len;
		atomic_store(&done[w], at);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct t_rng rng = { .s = 77 };
	uint8_t *buf = t_malloc(64 * 1024);

	(void)arg;
	while (!atomic_load(&stop)) {
		unsigned int w = (unsigned int)t_rand_below(&rng, NW);
		uint64_t upto = atomic_load(&done[w]), off;
		size_t len;
		ssize_t n;

		if (upto < 4096)
			continue;
		off = t_rand_below(&rng, upto - 1);
		len = 1 + (size_t)t_rand_below(&rng, 64 * 1024);
		if (off + len > upto)
			len = (size_t)(upto - off);
		off += (uint64_t)w * REGION;
		n = wtio_pread(f, buf, len, (off_t)off,
			       t_rand_below(&rng, 2) ? WTIO_DONTCACHE : 0);
		CHECKF(n == (ssize_t)len, "read %zu at %llu: %zd", len,
		       (unsigned long long)off, n);
		CHECKF(!memcmp(buf, want + off, len),
		       "read %zu at %llu differs from what was written", len,
		       (unsigned long long)off);
	}
	free(buf);
	return NULL;
}

static void *syncer(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		CHECK_OK(wtio_fsync(f));
		usleep(3000);
	}
	return NULL;
}

int main(void)
{
	struct wtio_config cfg;
	pthread_t tw[NW], tr, ts;
	const char *path;
	struct wtio_stats st;
	unsigned int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 8u << 20;
	ctx = t_ctx_create_or_skip(&cfg);
	path = t_tmpfile("dc-stream-mt");
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	want = t_malloc((size_t)NW * REGION);
	t_fill(want, (size_t)NW * REGION, 5, 0);
	CHECK(pthread_create(&tr, NULL, reader, NULL) == 0);
	CHECK(pthread_create(&ts, NULL, syncer, NULL) == 0);
	for (i = 0; i < NW; i++)
		CHECK(pthread_create(&tw[i], NULL, writer,
				     (void *)(uintptr_t)i) == 0);
	for (i = 0; i < NW; i++)
		pthread_join(tw[i], NULL);
	atomic_store(&stop, true);
	pthread_join(tr, NULL);
	pthread_join(ts, NULL);
	CHECK_OK(wtio_close(f));
	st = t_stats(ctx);
	CHECK_EQ(st.dirty_folios, 0);
	CHECK_EQ(st.writeback_folios, 0);
	CHECK_EQ(st.cached_folios, 0);
	t_check_disk_equals(path, want, (size_t)NW * REGION);
	printf("%d DONTCACHE streams through one handle, a reader and fsync: "
	       "%llu write I/Os, disk right, nothing left cached\n", NW,
	       (unsigned long long)st.write_ios);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(want);
	printf("PASS\n");
	return T_EXIT_PASS;
}
