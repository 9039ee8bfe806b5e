/* SPDX-License-Identifier: MIT */
/*
 * test_nowait - WTIO_NOWAIT returns -EAGAIN where the call would wait:
 * (i) a read miss needing I/O (a hit succeeds); (ii) a folio under
 * write-through writeback (its I/O held by a fault hold rule until the
 * test releases it: no timing window), and the file lock held by another
 * thread's write (which waits for that folio, so it holds the lock until
 * the release); (iii) a write needing a read-modify-write of an uncached
 * partial block.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "t_fault.h"

#define FSIZE	65536
#define BS	4096

static struct wtio_file *f;
static atomic_int t_done, u_done;
static uint8_t tbuf[2 * BS], ubuf[2 * BS];

static struct wtio_ctx *mkctx(struct wtio_fault *fault)
{
	struct wtio_config cfg;

	t_fault_config(&cfg, BS, 256);
	cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	return t_fault_ctx_create_or_skip(&cfg, fault);
}

static uint64_t nr_writeback(struct wtio_ctx *ctx)
{
	struct wtio_stats st;

	CHECK_OK(wtio_stats(ctx, &st));
	return st.writeback_folios;
}

static void *t_writer(void *arg)
{
	(void)arg;
	memset(tbuf, 'T', BS);
	CHECK_EQ(wtio_pwrite(f, tbuf, BS, 0, WTIO_WRITETHROUGH), BS);
	atomic_store(&t_done, 1);
	return NULL;
}

static void *u_writer(void *arg)
{
	(void)arg;
	memset(ubuf, 'U', 2 * BS);
	CHECK_EQ(wtio_pwrite(f, ubuf, 2 * BS, 0, WTIO_WRITETHROUGH), 2 * BS);
	atomic_store(&u_done, 1);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
	struct wtio_fault *fault;
	struct wtio_ctx *ctx;
	const char *path;
	uint8_t *data = t_malloc(FSIZE), *buf = t_malloc(FSIZE);
	pthread_t t, u;
	int eagain_rd = 0, probes = 0;
	double t0;

	t_require_odirect();
	/* A NOWAIT call that waits would wait for a held I/O forever. */
	t_watchdog(60, "FAIL: nowait hung (a NOWAIT call waited?)\n");
	path = t_tmpfile("nowait");
	t_fill(data, FSIZE, 5, 0);
	t_write_disk(path, data, FSIZE);
	fault = wtio_fault_create();
	CHECK(fault);

	/* (i) read miss vs hit, on a fresh context. */
	ctx = mkctx(fault);
	f = t_open(ctx, path, O_RDWR);
	CHECK_EQ(wtio_pread(f, buf, 100, 5 * BS + 7, WTIO_NOWAIT), -EAGAIN);
	CHECK_EQ(wtio_pread(f, buf, 100, 5 * BS + 7, 0), 100);
	CHECK(t_memdiff(buf, data + 5 * BS + 7, 100) < 0);
	CHECK_EQ(wtio_pread(f, buf, 100, 5 * BS + 7, WTIO_NOWAIT), 100);
	CHECK(t_memdiff(buf, data + 5 * BS + 7, 100) < 0);
	CHECK_EQ(wtio_pread(f, buf, BS, 6 * BS, WTIO_NOWAIT), -EAGAIN);
	printf("(i) NOWAIT read miss -> -EAGAIN, hit -> data\n");

	/* (iii) write needing RMW of an uncached partial block. */
	memset(buf, 'R', 100);
	CHECK_EQ(wtio_pwrite(f, buf, 100, 8 * BS + 10, WTIO_NOWAIT), -EAGAIN);
	CHECK_EQ(wtio_pwrite(f, buf, 100, 8 * BS + 10,
			     WTIO_NOWAIT | WTIO_WRITETHROUGH), -EAGAIN);
	CHECK_EQ(wtio_pread(f, buf, BS, 8 * BS, 0), BS);
	CHECKF(t_memdiff(buf, data + 8 * BS, BS) < 0,
	       "refused NOWAIT write changed data");
	/* A whole aligned block needs no read: it goes through. */
	memset(buf, 'W', BS);
	CHECK_EQ(wtio_pwrite(f, buf, BS, 9 * BS,
			     WTIO_NOWAIT | WTIO_WRITETHROUGH), BS);
	memcpy(data + 9 * BS, buf, BS);
	printf("(iii) NOWAIT partial-block write of uncached block -> -EAGAIN "
	       "(data unchanged); whole-block NOWAIT write succeeds\n");

	/* (ii) a folio under write-through writeback; the file lock. T's
	 * write I/O is held until the release below. */
	CHECK_EQ(wtio_pread(f, buf, FSIZE, 0, 0), FSIZE);	/* all cached */
	{
		struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE,
					     .count = 1, .hold = 1 };

		CHECK_OK(wtio_fault_add_rule(fault, &r));
	}
	CHECK_OK(pthread_create(&t, NULL, t_writer, NULL));
	CHECKF(wtio_fault_wait_held(fault, 1, 30000) == 0,
	       "write-through I/O never issued");
	CHECKF(nr_writeback(ctx) > 0, "held write-through I/O, but no folio "
	       "under writeback");
	memset(buf, 'N', BS);
	CHECK_EQ(wtio_pwrite(f, buf, BS, 0, WTIO_NOWAIT | WTIO_WRITETHROUGH),
		 -EAGAIN);
	CHECK_EQ(wtio_pwrite(f, buf, 100, 50, WTIO_NOWAIT | WTIO_WRITETHROUGH |
			     WTIO_NOSERIAL), -EAGAIN);
	CHECK_EQ(wtio_pwrite(f, buf, BS, 0, WTIO_NOWAIT), -EAGAIN);
	CHECKF(!atomic_load(&t_done), "delayed write finished too early");
	printf("(ii) folio under write-through writeback: NOWAIT write-through,"
	       " NOSERIAL and write-back writes -> -EAGAIN\n");

	/* U waits for T's folio holding the file lock exclusively, until
	 * the release: probe until it has the lock (bounded only against a
	 * hang; T cannot finish meanwhile). */
	CHECK_OK(pthread_create(&u, NULL, u_writer, NULL));
	t0 = now();
	while (now() - t0 < 30.0) {
		ssize_t r = wtio_pread(f, buf, BS, 10 * BS, WTIO_NOWAIT);

		probes++;
		if (r == -EAGAIN) {
			eagain_rd = 1;
			break;
		}
		CHECK_EQ(r, BS);
		usleep(200);
	}
	CHECKF(eagain_rd, "NOWAIT read never saw the file lock held (%d "
	       "probes)", probes);
	CHECK_EQ(wtio_pwrite(f, data + 11 * BS, BS, 11 * BS, WTIO_NOWAIT),
		 -EAGAIN);
	CHECK_EQ(wtio_pwrite(f, data + 11 * BS, BS, 11 * BS,
			     WTIO_NOWAIT | WTIO_WRITETHROUGH), -EAGAIN);
	CHECKF(!atomic_load(&t_done) && !atomic_load(&u_done),
	       "writers finished during the file-lock probes");
	printf("(ii) file lock held by a waiting writer: NOWAIT read, "
	       "write-back and write-through writes -> -EAGAIN (%d probes)\n",
	       probes);
	CHECK_EQ(wtio_fault_held(fault), 1);
	wtio_fault_release(fault);
	pthread_join(t, NULL);
	pthread_join(u, NULL);
	wtio_fault_clear_rules(fault);
	memset(data, 'U', 2 * BS);
	t_check_wtio_range(f, data, FSIZE, 0, FSIZE);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, data, FSIZE);
	wtio_fault_destroy(fault);
	free(data);
	free(buf);
	printf("PASS\n");
	return T_EXIT_PASS;
}
