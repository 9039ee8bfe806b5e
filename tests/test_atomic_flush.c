/* SPDX-License-Identifier: MIT */
/*
 * test_atomic_flush.c - untorn writes while the flushers, fsync and
 * drop-behind reads work on the same folios.
 *
 * An atomic write must be the last word on its range: no write-back I/O
 * of older data in it may reach the disk after its RWF_ATOMIC I/O, and
 * write-back data beside it (same folio, same cache) must not be lost.
 * On an XFS image on a loop device (77 with the reason otherwise), in a
 * 16-folio cache with low dirty thresholds (the flushers run all the
 * time), for 64 KiB and 1 MiB folios, four threads for about a second:
 *  - an atomic writer: 16 KiB slots at 16 KiB into each 64 KiB, every
 *    word of a write holding its version;
 *  - a write-back writer: random small writes outside the slots (the
 *    other blocks of the same folios), mirrored in a shadow, and one in
 *    eight a whole slot (left dirty for the next atomic write of it to
 *    flush first, never to be written over the atomic data later);
 *  - a syncer: fsync, fdatasync, sync_range WRITE|WAIT_AFTER in turn;
 *  - a reader: reads of whole slots (DONTCACHE every other one, so
 *    folios go back to the disk) that must hold one version throughout.
 * Then the disk must hold each slot's last version and the shadow
 * elsewhere. The test fails unless some atomic writes were issued while
 * the cache held dirty or writeback folios (the case it is about), and a
 * watchdog fails a hang.
 */
#include "helpers.h"
#include "xfs_loop.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define NSLOT 16
#define STRIDE 65536
#define SLOT_OFF 16384
#define SLOT_LEN 16384
#define FILE_LEN (NSLOT * STRIDE)

struct shared {
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	uint8_t *shadow;		/* outside the slots: the wb writer's */
	/* Each slot's last version written, and a lock that orders the
	 * two writers of a slot (the atomic writer, and the write-back
	 * writer's whole-slot writes), so that "last" is well defined. */
	uint64_t last[NSLOT];
	pthread_mutex_t slot_lock[NSLOT];
	atomic_bool stop;
	atomic_int failed;
	atomic_ullong atomics, busy_atomics, wb_writes, wb_slot_writes, syncs,
		      reads;
};

static void fail(struct shared *s, const char *fmt, long long a, long long b)
{
	fprintf(stderr, "FAIL: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n");
	atomic_store(&s->failed, 1);
	atomic_store(&s->stop, true);
}

static void fill_version(uint64_t *w, uint64_t v)
{
	size_t i;

	for (i = 0; i < SLOT_LEN / 8; i++)
		w[i] = v;
}

/* Version held by every word, or UINT64_MAX for a mix. */
static uint64_t one_version(const uint64_t *w)
{
	size_t i;

	for (i = 1; i < SLOT_LEN / 8; i++)
		if (w[i] != w[0])
			return UINT64_MAX;
	return w[0];
}

static void *atomic_writer(void *arg)
{
	struct shared *s = arg;
	uint64_t *buf = t_malloc(SLOT_LEN), v = 0;

	while (!atomic_load(&s->stop)) {
		int slot = (int)(v % NSLOT);
		struct wtio_stats st;
		ssize_t r;

		v++;
		fill_version(buf, (v << 8) | (uint64_t)slot);
		CHECK_OK(wtio_stats(s->ctx, &st));
		if (st.dirty_folios || st.writeback_folios)
			atomic_fetch_add(&s->busy_atomics, 1);
		pthread_mutex_lock(&s->slot_lock[slot]);
		r = wtio_pwrite(s->f, buf, SLOT_LEN,
				(off_t)slot * STRIDE + SLOT_OFF, WTIO_ATOMIC);
		if (r == SLOT_LEN)
			s->last[slot] = (v << 8) | (uint64_t)slot;
		pthread_mutex_unlock(&s->slot_lock[slot]);
		if (r != SLOT_LEN) {
			fail(s, "atomic write: %lld (slot %lld)", r, slot);
			break;
		}
		atomic_fetch_add(&s->atomics, 1);
	}
	free(buf);
	return NULL;
}

static void *wb_writer(void *arg)
{
	struct shared *s = arg;
	struct t_rng rng = { 77 };
	uint8_t *buf = t_malloc(SLOT_LEN);
	uint64_t n = 0;

	while (!atomic_load(&s->stop)) {
		int slot = (int)t_rand_below(&rng, NSLOT);

		/* One in 8: a whole slot, write-back, dirty in the cache
		 * when the next atomic write of the slot comes (which must
		 * flush it first and not be overwritten by it later). */
		if (t_rand_below(&rng, 8) == 0) {
			uint64_t v = ((n + 1) << 8) | (1ull << 63) |
				     (uint64_t)slot;
			ssize_t r;

			fill_version((uint64_t *)buf, v);
			pthread_mutex_lock(&s->slot_lock[slot]);
			r = wtio_pwrite(s->f, buf, SLOT_LEN,
					(off_t)slot * STRIDE + SLOT_OFF, 0);
			if (r == SLOT_LEN)
				s->last[slot] = v;
			pthread_mutex_unlock(&s->slot_lock[slot]);
			if (r != SLOT_LEN) {
				fail(s, "write-back slot write: %lld (slot "
				     "%lld)", r, slot);
				break;
			}
			n++;
			atomic_fetch_add(&s->wb_slot_writes, 1);
			continue;
		}
		size_t len = 1 + t_rand_below(&rng, 4096);
		/* [0, 16K) or [32K, 64K) of the stride: never the slot. */
		off_t in = t_rand_below(&rng, 2) ?
			(off_t)t_rand_below(&rng, SLOT_OFF - len + 1) :
			SLOT_OFF + SLOT_LEN +
			(off_t)t_rand_below(&rng, STRIDE - SLOT_OFF -
					    SLOT_LEN - len + 1);
		off_t off = (off_t)slot * STRIDE + in;
		ssize_t r;

		t_fill(buf, len, 1000 + n, (uint64_t)off);
		r = wtio_pwrite(s->f, buf, len, off, 0);
		if (r != (ssize_t)len) {
			fail(s, "write-back write: %lld (len %lld)", r,
			     (long long)len);
			break;
		}
		memcpy(s->shadow + off, buf, len);
		n++;
		atomic_fetch_add(&s->wb_writes, 1);
	}
	free(buf);
	return NULL;
}

static void *syncer(void *arg)
{
	struct shared *s = arg;
	unsigned int i = 0;

	while (!atomic_load(&s->stop)) {
		int ret;

		switch (i++ % 3) {
		case 0:
			ret = wtio_fsync(s->f);
			break;
		case 1:
			ret = wtio_fdatasync(s->f);
			break;
		default:
			ret = wtio_sync_range(s->f, 0, 0,
					      WTIO_SYNC_RANGE_WRITE |
					      WTIO_SYNC_RANGE_WAIT_AFTER);
			break;
		}
		if (ret) {
			fail(s, "sync %lld: %lld", (long long)(i % 3), ret);
			break;
		}
		atomic_fetch_add(&s->syncs, 1);
		usleep(500);
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct shared *s = arg;
	uint64_t *buf = t_malloc(SLOT_LEN);
	unsigned int i = 0;

	while (!atomic_load(&s->stop)) {
		int slot = (int)(i % NSLOT);
		ssize_t r = wtio_pread(s->f, buf, SLOT_LEN,
				       (off_t)slot * STRIDE + SLOT_OFF,
				       (i & 1) ? WTIO_DONTCACHE : 0);
		uint64_t v;

		i++;
		if (r != SLOT_LEN) {
			fail(s, "read: %lld (slot %lld)", r, slot);
			break;
		}
		v = one_version(buf);
		/* A whole-slot write-back write is seen whole too: it
		 * copies under the exclusive file lock. */
		if (v == UINT64_MAX || (v && (v & 0xff) != (uint64_t)slot)) {
			fail(s, "slot %lld torn or misplaced (word 0 %llx)",
			     slot, (long long)buf[0]);
			break;
		}
		atomic_fetch_add(&s->reads, 1);
	}
	free(buf);
	return NULL;
}

static void run_one(uint32_t fsz)
{
	struct wtio_config cfg;
	struct shared s = { 0 };
	const char *path = t_dir_file(xl.mnt, "flush");
	void *(*fns[4])(void *) = { atomic_writer, wb_writer, syncer, reader };
	uint8_t *disk, *init = t_zalloc(FILE_LEN);
	pthread_t th[4];
	uint64_t t0;
	size_t dlen;
	int i;

	wtio_config_init(&cfg);
	cfg.folio_size = fsz;
	cfg.cache_size = (uint64_t)fsz * WTIO_MIN_FOLIOS;
	cfg.readahead_max = 0;
	cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	cfg.dirty_background_ratio = 5;
	cfg.dirty_ratio = 25;
	cfg.dirty_expire_ms = 5;
	cfg.writeback_interval_ms = 5;
	s.ctx = t_ctx_create(&cfg);
	s.f = t_open(s.ctx, path, O_RDWR);
	s.shadow = t_zalloc(FILE_LEN);
	for (i = 0; i < NSLOT; i++)
		pthread_mutex_init(&s.slot_lock[i], NULL);
	/* Version 0 everywhere in the slots: zeros. */
	CHECK_EQ(wtio_pwrite(s.f, init, FILE_LEN, 0, 0), FILE_LEN);
	CHECK_OK(wtio_fsync(s.f));

	for (i = 0; i < 4; i++)
		CHECK_OK(pthread_create(&th[i], NULL, fns[i], &s));
	t0 = t_now_ms();
	while (t_now_ms() - t0 < 1000 && !atomic_load(&s.stop))
		usleep(10000);
	atomic_store(&s.stop, true);
	for (i = 0; i < 4; i++)
		CHECK_OK(pthread_join(th[i], NULL));
	CHECK(!atomic_load(&s.failed));

	CHECK_OK(wtio_close(s.f));
	CHECK_OK(wtio_ctx_destroy(s.ctx));
	disk = t_read_disk(path, &dlen);
	CHECK_EQ(dlen, FILE_LEN);
	for (i = 0; i < NSLOT; i++) {
		uint8_t *slot = disk + (size_t)i * STRIDE + SLOT_OFF;
		uint64_t v = one_version((const uint64_t *)slot);

		CHECKF(v == s.last[i], "folio %uK: slot %d on disk holds "
		       "version %llx, the last written is %llx", fsz >> 10, i,
		       (unsigned long long)v, (unsigned long long)s.last[i]);
		/* The shadow's slots: what the disk must have there. */
		memcpy(s.shadow + (size_t)i * STRIDE + SLOT_OFF, slot,
		       SLOT_LEN);
	}
	CHECKF(t_memdiff(disk, s.shadow, FILE_LEN) < 0,
	       "folio %uK: write-back data beside the slots differs on disk "
	       "at %lld", fsz >> 10, t_memdiff(disk, s.shadow, FILE_LEN));
	CHECKF(s.atomics > 0 && s.busy_atomics > 0 && s.wb_writes > 0 &&
	       s.wb_slot_writes > 0 &&
	       s.syncs > 0 && s.reads > 0,
	       "folio %uK: not everything ran (atomic %llu, with dirty or "
	       "writeback folios %llu, write-back %llu, syncs %llu, reads "
	       "%llu)", fsz >> 10, s.atomics, s.busy_atomics, s.wb_writes,
	       s.syncs, s.reads);
	printf("  folio %4uK: %llu atomic writes (%llu with dirty or "
	       "writeback folios cached), %llu write-back writes (%llu of "
	       "whole slots), %llu syncs, %llu slot reads: never torn, disk "
	       "= last versions + write-back data\n", fsz >> 10, s.atomics,
	       s.busy_atomics, s.wb_writes + s.wb_slot_writes,
	       s.wb_slot_writes, s.syncs, s.reads);
	free(disk);
	free(init);
	free(s.shadow);
	unlink(path);
}

static void watchdog_fire(int sig)
{
	static const char msg[] = "FAIL: watchdog: hang\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(T_EXIT_FAIL);
	xl_cleanup();
	_exit(T_EXIT_FAIL);
}

int main(void)
{
	struct wtio_file_info info;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	ret = xl_setup("atomic-flush", "");
	if (ret == XL_SKIP)
		t_skip("%s", xl.why);
	CHECKF(ret == XL_OK, "%s", xl.why);
	ctx = t_ctx(65536, WTIO_MIN_FOLIOS, WTIO_BACKEND_AUTO);
	f = t_open(ctx, t_dir_file(xl.mnt, "probe"), O_RDWR);
	CHECK_OK(wtio_file_info(f, &info));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	if (info.atomic_unit_max < SLOT_LEN || info.atomic_unit_min > SLOT_LEN) {
		xl_cleanup();
		t_skip("XFS here takes atomic writes of %u..%u bytes, not %u",
		       info.atomic_unit_min, info.atomic_unit_max, SLOT_LEN);
	}
	signal(SIGALRM, watchdog_fire);
	alarm(60);
	run_one(65536);
	run_one(1u << 20);
	alarm(0);
	t_remove_dir_files();
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	printf("PASS\n");
	return T_EXIT_PASS;
}
