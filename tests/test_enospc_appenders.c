/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_appenders - several threads append records at one shared
 * tail of a file on a small real XFS (a loop device over /dev/shm)
 * until it is full, in write-through DSYNC (each thread synchronous, or
 * with a queue of its own) and write-back (plain and DSYNC) modes, over
 * a small cache. Once every thread has seen ENOSPC: the size (wtio, and
 * on disk after close) is the end of the furthest acknowledged append,
 * every acknowledged byte is there, and every failure was ENOSPC (or a
 * short count, acknowledged as far as it goes).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/statvfs.h>

#include "helpers.h"
#include "xfs_loop.h"

#define IMG_SIZE	(128ll << 20)
#define ROOM		(16ll << 20)	/* left free for the appends */
#define THREADS		4
#define REC_MAX		(96 * 1024 + 777)
#define MAX_FILE	(IMG_SIZE)
#define QDEPTH		8

struct run {
	struct wtio_file *f;
	struct wtio_ctx *ctx;
	unsigned int flags;
	bool queued;
	_Atomic int64_t tail, acked_end;
	_Atomic long acked, failed;
	uint8_t *ok;
};

static void acked(struct run *r, int64_t off, int64_t len)
{
	int64_t e = atomic_load(&r->acked_end);

	/* Each record's bytes are its own: no lock needed. */
	memset(r->ok + off, 1, (size_t)len);
	atomic_fetch_add(&r->acked, 1);
	while (off + len > e &&
	       !atomic_compare_exchange_weak(&r->acked_end, &e, off + len))
		;
}

static void result(struct run *r, int64_t off, int64_t len, int64_t res,
		   int *fails)
{
	/* A short count (write-back: what the reserved space took) is
	 * acknowledged as far as it goes. */
	if (res > 0 && res <= len) {
		acked(r, off, res);
		if (res == len)
			return;
		res = -ENOSPC;
	}
	CHECKF(res == -ENOSPC, "append of %lld at %lld: %lld",
	       (long long)len, (long long)off, (long long)res);
	atomic_fetch_add(&r->failed, 1);
	(*fails)++;
}

static void *appender(void *arg)
{
	struct run *r = arg;
	struct t_rng rng = { .s = (uint64_t)pthread_self() | 1 };
	uint8_t *bufs[QDEPTH];
	struct wtio_cqe c[QDEPTH];
	struct wtio_queue *q = NULL;
	int i, n, slot = 0, fails = 0;

	for (i = 0; i < QDEPTH; i++)
		bufs[i] = t_malloc(REC_MAX);
	if (r->queued)
		CHECK_OK(wtio_queue_create(r->ctx, QDEPTH, &q));
	while (fails < 8) {
		size_t len = 1 + t_rand_below(&rng, REC_MAX - 1);
		int64_t off = atomic_fetch_add(&r->tail, (int64_t)len);

		if (off + (int64_t)len > MAX_FILE)
			break;
		t_fill(bufs[slot], len, 71, (uint64_t)off);
		if (!q) {
			result(r, off, (int64_t)len,
			       wtio_pwrite(r->f, bufs[slot], len, off,
					   r->flags), &fails);
			continue;
		}
		if (wtio_queue_inflight(q) == QDEPTH) {
			n = wtio_queue_reap(q, c, QDEPTH, 1, -1);
			CHECK(n > 0);
			while (n--)
				result(r, (int64_t)(c[n].user_data >> 20),
				       (int64_t)(c[n].user_data & 0xfffff),
				       c[n].res, &fails);
		}
		CHECK_OK(wtio_queue_pwrite(q, r->f, bufs[slot], len, off,
					   r->flags,
					   ((uint64_t)off << 20) | len));
		slot = (slot + 1) % QDEPTH;
	}
	while (q && wtio_queue_inflight(q)) {
		n = wtio_queue_reap(q, c, QDEPTH, 1, -1);
		CHECK(n > 0);
		while (n--)
			result(r, (int64_t)(c[n].user_data >> 20),
			       (int64_t)(c[n].user_data & 0xfffff), c[n].res,
			       &fails);
	}
	if (q)
		CHECK_OK(wtio_queue_destroy(q));
	for (i = 0; i < QDEPTH; i++)
		free(bufs[i]);
	return NULL;
}

static void run_mode(const char *name, unsigned int flags, bool queued)
{
	char path[256];
	struct run r = { .flags = flags, .queued = queued };
	pthread_t th[THREADS];
	int64_t i, end, size;
	uint8_t *d;
	size_t dlen;
	int ret;

	xl_path(path, sizeof(path), "appenders.bin");
	unlink(path);
	/* Let XFS give back what the last mode's file held. */
	sync();
	usleep(200 * 1000);
	r.ok = t_zalloc(MAX_FILE);
	r.ctx = t_ctx(4096, 1024, WTIO_BACKEND_AUTO);
	r.f = t_open(r.ctx, path, O_RDWR | O_CREAT);
	for (i = 0; i < THREADS; i++)
		CHECK_OK(pthread_create(&th[i], NULL, appender, &r));
	for (i = 0; i < THREADS; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	end = atomic_load(&r.acked_end);
	size = wtio_file_size(r.f);
	CHECKF(atomic_load(&r.failed) > 0, "%s: the filesystem never filled",
	       name);
	CHECKF(size == end, "%s: size %lld after the appends, the furthest "
	       "acknowledged ends at %lld", name, (long long)size,
	       (long long)end);
	ret = wtio_fsync(r.f);
	CHECKF(ret == 0, "%s: fsync %d after ENOSPC (everything kept was "
	       "acknowledged)", name, ret);
	CHECK_OK(wtio_close(r.f));
	CHECK_OK(wtio_ctx_destroy(r.ctx));
	d = t_read_disk(path, &dlen);
	CHECKF((int64_t)dlen == end, "%s: %zu bytes on disk after close, "
	       "want %lld", name, dlen, (long long)end);
	for (i = 0; i < end; i++)
		if (r.ok[i])
			CHECKF(d[i] == t_pattern_byte(71, (uint64_t)i),
			       "%s: acknowledged byte %lld lost", name,
			       (long long)i);
	printf("%-28s %ld appends acknowledged, %ld ENOSPC; size %lld = "
	       "the furthest acknowledged end, on disk too\n", name,
	       atomic_load(&r.acked), atomic_load(&r.failed),
	       (long long)end);
	free(d);
	free(r.ok);
	unlink(path);
}

int main(void)
{
	t_watchdog(300, "enospc appenders hung");
	xl_setup_shm_or_exit("enospc-app", IMG_SIZE, "");
	{
		/* Most of the space taken at once, so that each mode
		 * fills the rest in a moment. */
		char filler[256];
		struct statvfs sv;
		int fd;

		xl_path(filler, sizeof(filler), "filler");
		fd = open(filler, O_RDWR | O_CREAT, 0600);
		CHECK(fd >= 0 && statvfs(xl.mnt, &sv) == 0);
		CHECK_OK(fallocate(fd, 0, 0, (off_t)sv.f_bavail *
				   (off_t)sv.f_frsize - ROOM));
		CHECK_OK(fsync(fd));
		close(fd);
	}
	run_mode("write-through DSYNC", WTIO_WRITETHROUGH | WTIO_DSYNC,
		 false);
	run_mode("queued write-through DSYNC", WTIO_WRITETHROUGH | WTIO_DSYNC,
		 true);
	run_mode("queued write-through", WTIO_WRITETHROUGH, true);
	run_mode("write-back", 0, false);
	run_mode("write-back DSYNC", WTIO_DSYNC, false);
	xl_cleanup();
	printf("PASS\n");
	return T_EXIT_PASS;
}
