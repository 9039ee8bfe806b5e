/* SPDX-License-Identifier: MIT */
/*
 * test_wt_overlap - 4 threads write-through the same 64 KiB range (16
 * folios of 4 KiB), each with its own byte. Without WTIO_NOSERIAL the
 * range is always one writer's data entirely (never a mix), for a
 * concurrent reader too; with NOSERIAL each folio is one writer's byte
 * (no tear inside a folio). Checked in the cache and on disk.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define NW	4
#define RANGE	65536
#define FOLIO	4096
#define ROUNDS	150

static struct wtio_file *f;
static const char *path;
static pthread_barrier_t bar;
static unsigned int mode_flags;
static atomic_int stop_reader;
static atomic_long reader_checks;

static void *writer(void *arg)
{
	int id = (int)(long)arg;
	uint8_t *buf = t_malloc(RANGE);
	int r;

	memset(buf, 'A' + id, RANGE);
	for (r = 0; r < ROUNDS; r++) {
		pthread_barrier_wait(&bar);
		CHECK_EQ(wtio_pwrite(f, buf, RANGE, 0,
				     WTIO_WRITETHROUGH | mode_flags), RANGE);
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);	/* main checks */
	}
	free(buf);
	return NULL;
}

/* Whole range one byte (serial) or each folio one writer byte. */
static void check_buf(const uint8_t *b, bool serial, const char *where,
		      int round)
{
	size_t i, start;

	for (start = 0; start < RANGE; start += serial ? RANGE : FOLIO) {
		size_t end = start + (serial ? RANGE : FOLIO);
		uint8_t c = b[start];

		CHECKF(c == 0 || (c >= 'A' && c < 'A' + NW),
		       "%s round %d: byte %02x at %zu", where, round, c, start);
		for (i = start; i < end; i++)
			CHECKF(b[i] == c,
			       "%s round %d (%s): mix at %zu: %c then %c at %zu",
			       where, round, serial ? "serial" : "noserial",
			       start, c, b[i], i);
	}
}

static void *reader(void *arg)
{
	uint8_t *buf = t_malloc(RANGE);

	(void)arg;
	while (!atomic_load(&stop_reader)) {
		CHECK_EQ(wtio_pread(f, buf, RANGE, 0, 0), RANGE);
		check_buf(buf, !(mode_flags & WTIO_NOSERIAL), "reader", -1);
		atomic_fetch_add(&reader_checks, 1);
	}
	free(buf);
	return NULL;
}

static void run(unsigned int flags)
{
	pthread_t w[NW], rd;
	uint8_t *buf = t_malloc(RANGE);
	struct wtio_ctx *ctx = t_ctx(FOLIO, 1024, WTIO_BACKEND_AUTO);
	bool serial = !(flags & WTIO_NOSERIAL);
	long mixes = 0;
	int i, r;

	path = t_tmpfile("wtoverlap");
	mode_flags = flags;
	f = t_open(ctx, path, O_RDWR);
	memset(buf, 0, RANGE);
	CHECK_EQ(wtio_pwrite(f, buf, RANGE, 0, WTIO_WRITETHROUGH), RANGE);
	atomic_store(&stop_reader, 0);
	atomic_store(&reader_checks, 0);
	pthread_barrier_init(&bar, NULL, NW + 1);
	for (i = 0; i < NW; i++)
		CHECK_OK(pthread_create(&w[i], NULL, writer, (void *)(long)i));
	CHECK_OK(pthread_create(&rd, NULL, reader, NULL));
	for (r = 0; r < ROUNDS; r++) {
		size_t dlen;
		uint8_t *d;

		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar);
		/* All writers returned: cache and disk agree and are whole. */
		CHECK_EQ(wtio_pread(f, buf, RANGE, 0, 0), RANGE);
		check_buf(buf, serial, "cache", r);
		d = t_read_disk(path, &dlen);
		CHECK(dlen >= RANGE);
		check_buf(d, serial, "disk", r);
		CHECKF(t_memdiff(d, buf, RANGE) < 0,
		       "round %d: disk differs from cache at %lld", r,
		       t_memdiff(d, buf, RANGE));
		for (i = FOLIO; i < RANGE; i += FOLIO)
			if (buf[i] != buf[0])
				mixes++;
		free(d);
		pthread_barrier_wait(&bar);
	}
	for (i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop_reader, 1);
	pthread_join(rd, NULL);
	pthread_barrier_destroy(&bar);
	printf("%s: %d rounds of %d overlapping 64K write-through writers, "
	       "cache+disk checked, %ld reader checks, %ld folio boundaries "
	       "mixed\n", serial ? "serial" : "NOSERIAL", ROUNDS, NW,
	       atomic_load(&reader_checks), mixes);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
}

int main(void)
{
	t_require_odirect();
	run(0);
	run(WTIO_NOSERIAL);
	printf("PASS\n");
	return T_EXIT_PASS;
}
