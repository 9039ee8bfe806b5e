/* SPDX-License-Identifier: MIT */
/*
 * test_fsync_crash.c - crash consistency with the fault backend's
 * recorder: write, fsync, write more (some of it written back without
 * fsync), fsync, ..., then crash (wtio_ctx_crash). For every prefix of the
 * recorded events and several seeds, rebuild the disk (wtio_fault_replay)
 * and check: every byte fsync'd before the prefix is present (or replaced
 * by a later write's byte), the size is at least the fsync'd size, and
 * bytes no write ever covered are zero. The replay tears unflushed writes
 * (only some of their blocks land); the test counts the torn replays and
 * fails if there were none.
 */
#include "helpers.h"
#include "t_fault.h"

#define FILE_MAX (768u << 10)
#define MAX_W 256
#define MAX_SYNC 8

struct wrec {
	off_t off;
	size_t len;
	uint64_t seed;
	uint64_t ev_before;	/* events recorded before the write began */
};

static struct wrec wr[MAX_W];
static int nr_wr;
static struct {
	uint64_t ev_after;	/* events recorded when fsync returned */
	uint8_t *snap;
	size_t size;
	int nr_wr;		/* writes before it */
} syncs[MAX_SYNC];
static int nr_sync;
static uint64_t crash_points, replays, bytes_checked;
/* Replays that tore an unflushed write (some of its blocks only), and the
 * torn writes: without any, torn writes were never checked. */
static uint64_t torn_replays, torn_writes;

static void do_write(struct wtio_fault *fault, struct wtio_file *f,
		     uint8_t *shadow, size_t *size, off_t off, size_t len,
		     uint64_t seed)
{
	CHECK(nr_wr < MAX_W);
	wr[nr_wr] = (struct wrec){ off, len, seed, wtio_fault_nr_events(fault) };
	nr_wr++;
	t_pwrite_shadow(f, shadow, size, off, len, seed, 0);
}

static void do_fsync(struct wtio_fault *fault, struct wtio_file *f,
		     const uint8_t *shadow, size_t size)
{
	CHECK_OK(wtio_fsync(f));
	CHECK(nr_sync < MAX_SYNC);
	syncs[nr_sync].ev_after = wtio_fault_nr_events(fault);
	syncs[nr_sync].snap = t_malloc(size);
	memcpy(syncs[nr_sync].snap, shadow, size);
	syncs[nr_sync].size = size;
	syncs[nr_sync].nr_wr = nr_wr;
	nr_sync++;
}

/* Is value v at byte b explained by a write that may be in prefix n and
 * came after write index first? */
static bool later_write_has(int first, uint64_t n, size_t b, uint8_t v)
{
	int i;

	for (i = first; i < nr_wr; i++) {
		if (wr[i].ev_before >= n)
			break;
		if ((size_t)wr[i].off <= b && b < (size_t)wr[i].off + wr[i].len &&
		    t_pattern_byte(wr[i].seed, b) == v)
			return true;
	}
	return false;
}

static void check_replay(const uint8_t *d, size_t dlen, uint64_t n,
			 uint64_t seed)
{
	int k = -1, i;
	size_t b, snap_size = 0;
	const uint8_t *snap = NULL;
	int first = 0;

	for (i = 0; i < nr_sync; i++)
		if (syncs[i].ev_after <= n)
			k = i;
	if (k >= 0) {
		snap = syncs[k].snap;
		snap_size = syncs[k].size;
		first = syncs[k].nr_wr;
	}
	CHECKF(dlen >= snap_size,
	       "prefix %llu seed %llu: size %zu < fsync'd size %zu",
	       (unsigned long long)n, (unsigned long long)seed, dlen, snap_size);
	for (b = 0; b < dlen; b++) {
		uint8_t v = d[b];

		if (b < snap_size && v == snap[b])
			continue;
		if (b >= snap_size && v == 0)
			continue;
		if (later_write_has(first, n, b, v))
			continue;
		/* Outside fsync'd data, a byte of a write recorded but
		 * never fsync'd is also allowed. */
		if (later_write_has(0, n, b, v) && !(b < snap_size))
			continue;
		CHECKF(0, "prefix %llu seed %llu (fsync #%d, size %zu): byte %zu "
		       "is %02x, fsync'd %02x", (unsigned long long)n,
		       (unsigned long long)seed, k, snap_size, b, v,
		       b < snap_size ? snap[b] : 0);
	}
	bytes_checked += dlen;
}

static void run(uint32_t fs, uint64_t budget, uint64_t seed0)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	const char *path = t_tmpfile("crash");
	const char *dpath = t_tmpfile("crash-replay");
	uint8_t *shadow = t_zalloc(FILE_MAX);
	size_t size = 0;
	struct t_rng r = { seed0 };
	uint64_t total, n, s, torn0 = torn_replays;
	int phase, i, dfd;

	nr_wr = 0;
	nr_sync = 0;
	CHECK(fault);
	ctx = t_fault_ctx(fault, fs, budget);
	/* The file is new and empty: the replay starts from an empty file. */
	f = t_open(ctx, path, O_RDWR | O_CREAT);

	for (phase = 0; phase < 4; phase++) {
		int nw = 3 + (int)t_rand_below(&r, 4);

		for (i = 0; i < nw; i++) {
			size_t len = 1 + t_rand_below(&r, 48 << 10);
			off_t off = (off_t)t_rand_below(&r, FILE_MAX - len);

			do_write(fault, f, shadow, &size, off, len,
				 seed0 * 1000 + (uint64_t)nr_wr);
			/* Some data reaches the disk without an fsync. */
			if (t_rand_below(&r, 2))
				CHECK_OK(wtio_sync_range(f, off, (off_t)len,
					WTIO_SYNC_RANGE_WRITE |
					WTIO_SYNC_RANGE_WAIT_AFTER));
		}
		if (phase < 3)
			do_fsync(fault, f, shadow, size);
	}
	/* Unsynced data that is only in the cache is lost; fine. */
	wtio_ctx_crash(ctx);
	total = wtio_fault_nr_events(fault);
	CHECK(nr_sync == 3);
	CHECK(total >= syncs[0].ev_after);

	dfd = open(dpath, O_RDWR);
	CHECK(dfd >= 0);
	/* Start at the prefix that includes the first fsync's flush. */
	for (n = syncs[0].ev_after; n <= total; n++) {
		crash_points++;
		for (s = 0; s < 5; s++) {
			uint64_t sd = s ? seed0 * 100 + s : 0;
			struct wtio_fault_replay_info ri;
			size_t dlen;
			uint8_t *d;

			CHECK_OK(ftruncate(dfd, 0));
			CHECK_OK(wtio_fault_replay_ex(fault, path, n, sd, dfd,
						      &ri));
			torn_replays += ri.writes_torn > 0;
			torn_writes += ri.writes_torn;
			d = t_read_disk(dpath, &dlen);
			check_replay(d, dlen, n, sd);
			free(d);
			replays++;
		}
	}
	/* Seed 0 with every event: all written-back data, and at least the
	 * last fsync's content. */
	close(dfd);
	printf("  folio %u: %d writes, %d fsyncs, %llu events, prefixes "
	       "%llu..%llu x 5 seeds, %llu torn replays\n", fs, nr_wr, nr_sync,
	       (unsigned long long)total, (unsigned long long)syncs[0].ev_after,
	       (unsigned long long)total,
	       (unsigned long long)(torn_replays - torn0));
	CHECKF(torn_replays > torn0, "no replay tore a write: the torn-write "
	       "checks never ran");
	for (i = 0; i < nr_sync; i++)
		free(syncs[i].snap);
	wtio_fault_destroy(fault);
	unlink(path);
	unlink(dpath);
	free(shadow);
}

int main(void)
{
	t_require_odirect();
	run(4096, 64, 1);
	run(4096, 1024, 2);
	run(16384, 32, 3);
	run(65536, 64, 4);
	printf("fsync_crash: %llu crash points, %llu replays (%llu torn, %llu "
	       "torn writes), %llu bytes checked: PASS\n",
	       (unsigned long long)crash_points, (unsigned long long)replays,
	       (unsigned long long)torn_replays, (unsigned long long)torn_writes,
	       (unsigned long long)bytes_checked);
	return T_EXIT_PASS;
}
