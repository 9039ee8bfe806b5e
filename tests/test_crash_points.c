/* SPDX-License-Identifier: MIT */
/*
 * test_crash_points.c - crashes and I/O faults at many points, with the
 * fault backend (wtio_fault.h).
 *
 * Crashes: a random single-threaded workload of acknowledged writes in
 * every mode (write-back, write-through, NOSERIAL, DONTCACHE, DSYNC both
 * ways, asynchronous write-through), sync_range, fsync and fdatasync, then
 * wtio_ctx_crash(). For every prefix of the recorded events from the first
 * fsync on, and several seeds that keep a random half of the unflushed
 * writes, the replayed file must hold, byte for byte, the newest durable
 * value of each byte (fsync'd, or written by an acknowledged DSYNC write)
 * or a value of a write issued after it; its size must cover every
 * durable byte and pass the end of the furthest write issued within the
 * prefix by no more than its tail block; bytes no write covered are zero. The replay tears
 * unflushed writes (some blocks only) and the test fails if no replay
 * tore any.
 *
 * Faults: EIO, ENOSPC and short I/O injected at random points on reads
 * (misses and read-modify-write), writeback and write-through: the
 * failing write-through call or read sees the error, fsync reports a
 * writeback error once per handle, later syncs succeed once the rules are
 * gone, and the cache never serves data the disk refused (after a failed
 * write-through, every read matches the disk).
 *
 * With the argument "adaptive": the crashes only, in contexts made
 * adaptive (WTIO_CONFIG_ADAPTIVE) and small enough that the adaptive
 * writes often cross the dirty limit and go write-through; the same
 * checks, and at least one write must have gone write-through.
 *
 * With the argument "large": the crashes and the faults in contexts with
 * WTIO_CONFIG_LARGE_FOLIOS, where a file's folio size is its first I/O's
 * length (4 to 64 KiB): a write, a torn replay or a failed I/O then
 * covers part of a folio of several blocks. A read of the whole file
 * before each crash counts folio lookups: at least one run must have
 * had folios larger than a block, or the variant tested nothing new.
 */
#include <signal.h>

#include "helpers.h"
#include "t_fault.h"

/* wtio_ctx_crash() leaks the handles still open, on purpose (a crashed
 * process never closed them). Tell LeakSanitizer, for this program only. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:wtio_file_open\n";
}

static uint64_t crash_points, replays, nr_ops, faults_injected, fault_rounds;
/* Replays in which at least one unflushed write was torn, and the torn
 * writes: without any, the checker never met a torn write. */
static uint64_t torn_replays, torn_writes;
/* Replays whose size was past every write, up to the tail block's end. */
static uint64_t rounded_sizes;
#define C_BLK	4096
/* "adaptive": every context adaptive; its writes written through. */
static bool adaptive;
static uint64_t adaptive_wt;
/* "large": WTIO_CONFIG_LARGE_FOLIOS; runs whose file had large folios. */
static bool large;
static uint64_t large_runs;

static struct wtio_ctx *fault_ctx(struct wtio_fault *fault, uint32_t fs,
				  uint64_t nr_folios)
{
	struct wtio_config cfg;

	t_fault_config(&cfg, fs, nr_folios);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	if (cfg.readahead_max < fs)
		cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	if (adaptive) {
		/* A limit of a folio or two: writes cross it often. */
		cfg.flags |= WTIO_CONFIG_ADAPTIVE;
		cfg.dirty_background_ratio = 2;
		cfg.dirty_ratio = 4;
	}
	if (large)
		cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS;
	return t_fault_ctx_create_or_skip(&cfg, fault);
}

/* ================= crashes ================= */

#define C_FILE	(256u << 10)
#define C_MAXW	160
#define C_MAXS	16

struct cwrite {
	off_t off;
	size_t len;
	uint64_t seed;
	uint64_t ev_before;	/* events recorded before it was issued */
	uint64_t ev_ack;	/* events recorded when it was acknowledged */
	bool durable;		/* DSYNC: durable from ev_ack on */
};

static struct cwrite cw[C_MAXW];
static int nr_cw;
static struct {
	uint64_t ev_after;
	int nr_w;		/* writes issued before it */
	size_t size;
	uint8_t *snap;
} cs[C_MAXS];
static int nr_cs;

static void crash_write(struct wtio_fault *fault, struct wtio_file *f,
			struct wtio_queue *q, uint8_t *shadow, size_t *size,
			struct t_rng *r)
{
	static const unsigned modes[] = {
		0, WTIO_WRITETHROUGH, WTIO_WRITETHROUGH | WTIO_NOSERIAL,
		WTIO_DSYNC, WTIO_WRITETHROUGH | WTIO_DSYNC,
		WTIO_WRITETHROUGH | WTIO_NOSERIAL | WTIO_DSYNC,
		WTIO_DONTCACHE, WTIO_WRITETHROUGH | WTIO_DONTCACHE,
		WTIO_DSYNC | WTIO_DONTCACHE,
	};
	/* Adaptive: mostly plain writes, which leave dirty data behind
	 * them (and go write-through when there is too much of it). */
	static const unsigned amodes[] = {
		0, 0, 0, 0, 0, WTIO_DSYNC, WTIO_DONTCACHE, WTIO_WRITETHROUGH,
		WTIO_WRITETHROUGH | WTIO_DSYNC,
	};
	unsigned flags = adaptive ?
		amodes[t_rand_below(r, sizeof(amodes) / sizeof(amodes[0]))] :
		modes[t_rand_below(r, sizeof(modes) / sizeof(modes[0]))];
	size_t len = 1 + t_rand_below(r, t_rand_below(r, 4) ? 12000 : 70000);
	off_t off = (off_t)t_rand_below(r, C_FILE - len);
	bool async = (flags & WTIO_WRITETHROUGH) && t_rand_below(r, 3) == 0;
	struct cwrite *w = &cw[nr_cw];
	uint8_t *buf = t_malloc(len);

	CHECK(nr_cw < C_MAXW);
	*w = (struct cwrite){ off, len, 7000 + (uint64_t)nr_cw,
			      wtio_fault_nr_events(fault), 0,
			      (flags & WTIO_DSYNC) != 0 };
	nr_cw++;
	t_fill(buf, len, w->seed, (uint64_t)off);
	if (async) {
		struct wtio_cqe cqe;

		CHECK_OK(wtio_queue_pwrite(q, f, buf, len, off, flags, 1));
		memset(buf, 0, len);	/* reusable at once */
		CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
		CHECK_EQ(cqe.res, (long long)len);
		t_fill(buf, len, w->seed, (uint64_t)off);
	} else {
		CHECK_EQ(wtio_pwrite(f, buf, len, off, flags), (long long)len);
	}
	w->ev_ack = wtio_fault_nr_events(fault);
	memcpy(shadow + off, buf, len);
	if ((size_t)off + len > *size)
		*size = (size_t)off + len;
	free(buf);
	nr_ops++;
}

static void crash_sync(struct wtio_fault *fault, struct wtio_file *f,
		       const uint8_t *shadow, size_t size, bool data_only)
{
	CHECK_OK(data_only ? wtio_fdatasync(f) : wtio_fsync(f));
	CHECK(nr_cs < C_MAXS);
	cs[nr_cs].ev_after = wtio_fault_nr_events(fault);
	cs[nr_cs].nr_w = nr_cw;
	cs[nr_cs].size = size;
	cs[nr_cs].snap = t_malloc(size);
	memcpy(cs[nr_cs].snap, shadow, size);
	nr_cs++;
	nr_ops++;
}

/*
 * For prefix n: floor[b] is the newest durable value of byte b and
 * floor_w[b] the index of the first write that may have replaced it
 * (nr_cw when nothing durable covers b: then any write, or zero).
 */
static void build_floor(uint64_t n, uint8_t *floor_v, int *floor_w,
			uint8_t *has_floor, size_t *min_size, size_t *max_size)
{
	int k = -1, i;
	size_t b;

	/* No file can be longer than the furthest write that had begun. */
	*max_size = 0;
	for (i = 0; i < nr_cw; i++)
		if (cw[i].ev_before < n &&
		    (size_t)cw[i].off + cw[i].len > *max_size)
			*max_size = (size_t)cw[i].off + cw[i].len;

	for (i = 0; i < nr_cs; i++)
		if (cs[i].ev_after <= n)
			k = i;
	memset(has_floor, 0, C_FILE);
	memset(floor_v, 0, C_FILE);
	*min_size = 0;
	if (k >= 0) {
		for (b = 0; b < cs[k].size; b++) {
			floor_v[b] = cs[k].snap[b];
			floor_w[b] = cs[k].nr_w;
			has_floor[b] = 1;
		}
		*min_size = cs[k].size;
	}
	/* DSYNC writes acknowledged within the prefix and issued after the
	 * fsync: newer durable values. */
	for (i = k >= 0 ? cs[k].nr_w : 0; i < nr_cw; i++) {
		if (!cw[i].durable || cw[i].ev_ack > n)
			continue;
		for (b = (size_t)cw[i].off; b < (size_t)cw[i].off + cw[i].len; b++) {
			floor_v[b] = t_pattern_byte(cw[i].seed, b);
			floor_w[b] = i + 1;
			has_floor[b] = 1;
		}
		if ((size_t)cw[i].off + cw[i].len > *min_size)
			*min_size = (size_t)cw[i].off + cw[i].len;
	}
}

static void check_crash_image(const uint8_t *d, size_t dlen, uint64_t n,
			      uint64_t seed, const uint8_t *floor_v,
			      const int *floor_w, const uint8_t *has_floor,
			      size_t min_size, size_t max_size)
{
	size_t b;
	int i;

	CHECKF(dlen >= min_size, "prefix %llu seed %llu: size %zu cuts durable "
	       "data up to %zu", (unsigned long long)n, (unsigned long long)seed,
	       dlen, min_size);
	/*
	 * From above: an extending direct write of the tail block leaves the
	 * backing file at the block's end until wtio sets the exact size, so
	 * a crash in between may show up to a block of zeros more (the
	 * kernel's own writes never do; counted and printed). Never more.
	 */
	CHECKF(dlen <= ((max_size + C_BLK - 1) & ~(size_t)(C_BLK - 1)),
	       "prefix %llu seed %llu: size %zu is past the end of every "
	       "write issued (%zu), rounded to a block",
	       (unsigned long long)n, (unsigned long long)seed, dlen,
	       max_size);
	if (dlen > max_size)
		rounded_sizes++;
	for (b = 0; b < dlen; b++) {
		uint8_t v = d[b];
		int first = has_floor[b] ? floor_w[b] : 0;
		bool ok;

		if (b < C_FILE && v == floor_v[b])
			continue;	/* durable value, or zero with no floor */
		CHECKF(b < C_FILE, "prefix %llu: byte %zu past every write",
		       (unsigned long long)n, b);
		ok = false;
		for (i = first; i < nr_cw && !ok; i++)
			ok = cw[i].ev_before < n && (size_t)cw[i].off <= b &&
			     b < (size_t)cw[i].off + cw[i].len &&
			     t_pattern_byte(cw[i].seed, b) == v;
		CHECKF(ok, "prefix %llu seed %llu: byte %zu is %02x, durable %s "
		       "%02x (from write #%d on)", (unsigned long long)n,
		       (unsigned long long)seed, b, v,
		       has_floor[b] ? "value" : "none, zero", floor_v[b],
		       has_floor[b] ? floor_w[b] : 0);
	}
}

/*
 * Whether f's folios are larger than a block: a read of its size bytes
 * looks up one folio per folio size (a hit or a miss each), so fewer
 * lookups than 4 KiB blocks means larger folios. It also checks the
 * cache against the shadow once more before the crash.
 */
static void count_large(struct wtio_ctx *ctx, struct wtio_file *f,
			size_t size)
{
	struct wtio_stats a = t_stats(ctx), b;
	uint8_t *buf = t_malloc(size);
	uint64_t lookups, blocks = (size + C_BLK - 1) / C_BLK;

	CHECK_EQ(wtio_pread(f, buf, size, 0, 0), (long long)size);
	b = t_stats(ctx);
	lookups = b.hits + b.misses - a.hits - a.misses;
	printf("  large: %llu lookups for %llu blocks\n",
	       (unsigned long long)lookups, (unsigned long long)blocks);
	large_runs += lookups < blocks;
	free(buf);
}

static void crash_run(uint32_t fs, uint64_t budget, uint64_t seed0, int nsyncs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_ctx *ctx;
	struct wtio_queue *q;
	struct wtio_file *f;
	const char *path = t_tmpfile("cp");
	const char *dpath = t_tmpfile("cp-replay");
	uint8_t *shadow = t_zalloc(C_FILE), *floor_v = t_malloc(C_FILE),
		*has_floor = t_malloc(C_FILE), *d = t_malloc(2 * C_FILE);
	int *floor_w = t_malloc(C_FILE * sizeof(int));
	size_t size = 0, min_size, max_size;
	uint64_t torn0 = torn_replays;
	struct t_rng r = { seed0 };
	uint64_t total, n, s, first;
	int i, j, dfd;

	CHECK(fault);
	nr_cw = nr_cs = 0;
	ctx = fault_ctx(fault, fs, budget);
	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	f = t_open(ctx, path, O_RDWR | O_CREAT);
	for (i = 0; i < nsyncs; i++) {
		int nw = 2 + (int)t_rand_below(&r, 6);

		for (j = 0; j < nw; j++) {
			crash_write(fault, f, q, shadow, &size, &r);
			if (t_rand_below(&r, 4) == 0) {
				CHECK_OK(wtio_sync_range(f, 0, 0,
					WTIO_SYNC_RANGE_WRITE));
				nr_ops++;
			}
		}
		crash_sync(fault, f, shadow, size, t_rand_below(&r, 3) == 0);
	}
	/* Unsynced tail: some written back, some only cached. */
	for (j = 0; j < 6; j++)
		crash_write(fault, f, q, shadow, &size, &r);
	CHECK_OK(wtio_sync_range(f, 0, C_FILE / 2, WTIO_SYNC_RANGE_WRITE));
	crash_write(fault, f, q, shadow, &size, &r);
	CHECK_OK(wtio_queue_destroy(q));
	adaptive_wt += t_stats(ctx).adaptive_writethrough;
	if (large)
		count_large(ctx, f, size);
	wtio_ctx_crash(ctx);
	total = wtio_fault_nr_events(fault);

	dfd = open(dpath, O_RDWR);
	CHECK(dfd >= 0);
	/* The window: every prefix from just before the first fsync. */
	first = cs[0].ev_after > 3 ? cs[0].ev_after - 3 : 0;
	for (n = first; n <= total; n++) {
		build_floor(n, floor_v, floor_w, has_floor, &min_size,
			    &max_size);
		crash_points++;
		for (s = 0; s < 4; s++) {
			uint64_t sd = s ? seed0 * 1000 + n * 10 + s : 0;
			struct wtio_fault_replay_info ri;
			ssize_t got;

			CHECK_OK(ftruncate(dfd, 0));
			CHECK_OK(wtio_fault_replay_ex(fault, path, n, sd, dfd,
						      &ri));
			got = pread(dfd, d, 2 * C_FILE, 0);
			CHECK(got >= 0);
			CHECK_EQ(lseek(dfd, 0, SEEK_END), got);
			check_crash_image(d, (size_t)got, n, sd, floor_v, floor_w,
					  has_floor, min_size, max_size);
			replays++;
			torn_replays += ri.writes_torn > 0;
			torn_writes += ri.writes_torn;
		}
	}
	close(dfd);
	printf("  crash folio %u budget %llu: %d writes, %d syncs, %llu events, "
	       "prefixes %llu..%llu x 4 seeds, %llu torn replays\n", fs,
	       (unsigned long long)budget, nr_cw, nr_cs,
	       (unsigned long long)total, (unsigned long long)first,
	       (unsigned long long)total,
	       (unsigned long long)(torn_replays - torn0));
	CHECKF(torn_replays > torn0, "no replay tore a write: the torn-write "
	       "checks never ran");
	for (i = 0; i < nr_cs; i++)
		free(cs[i].snap);
	wtio_fault_destroy(fault);
	free(shadow);
	free(floor_v);
	free(floor_w);
	free(has_floor);
	free(d);
}

/* ================= faults ================= */

#define F_FILE	(192u << 10)

struct fenv {
	struct wtio_fault *fault;
	struct wtio_ctx *ctx;
	struct wtio_file *f, *f2;	/* two handles of one file */
	const char *path;
	uint8_t *shadow;	/* what wtio must return */
	size_t size;
	struct t_rng r;
};

static void fenv_open(struct fenv *e, uint32_t fs, uint64_t budget,
		      uint64_t seed)
{
	e->fault = wtio_fault_create();
	CHECK(e->fault);
	e->path = t_tmpfile("fp");
	e->shadow = t_malloc(F_FILE);
	e->size = F_FILE;
	e->r.s = seed;
	t_fill(e->shadow, F_FILE, seed, 0);
	t_write_disk(e->path, e->shadow, F_FILE);
	e->ctx = fault_ctx(e->fault, fs, budget);
	e->f = t_open(e->ctx, e->path, O_RDWR);
	e->f2 = t_open(e->ctx, e->path, O_RDWR);
}

static void fenv_close(struct fenv *e)
{
	wtio_fault_clear_rules(e->fault);
	CHECK_OK(wtio_close(e->f));
	CHECK_OK(wtio_close(e->f2));
	CHECK_OK(wtio_ctx_destroy(e->ctx));
	t_check_disk_equals(e->path, e->shadow, e->size);
	faults_injected += wtio_fault_injected(e->fault);
	wtio_fault_destroy(e->fault);
	unlink(e->path);
	free(e->shadow);
}

/* Every byte wtio returns equals the disk's (zeros past the disk's end,
 * up to wtio's size). */
static void check_cache_matches_disk(struct fenv *e, const char *what)
{
	off_t ws = wtio_file_size(e->f);
	size_t dlen;
	uint8_t *d = t_read_disk(e->path, &dlen), *b;
	long long at;
	size_t i;

	CHECK(ws >= 0);
	b = t_malloc((size_t)ws);
	CHECK_EQ(wtio_pread(e->f, b, (size_t)ws, 0, 0), ws);
	for (i = 0; i < (size_t)ws; i++)
		if (b[i] != (i < dlen ? d[i] : 0))
			break;
	at = i < (size_t)ws ? (long long)i : -1;
	CHECKF(at < 0, "%s: wtio serves %02x at %lld, the disk has %02x", what,
	       b[at], at, (size_t)at < dlen ? d[at] : 0);
	/* From now on the disk is the truth. */
	memset(e->shadow, 0, F_FILE);
	memcpy(e->shadow, d, dlen < F_FILE ? dlen : F_FILE);
	memcpy(e->shadow, b, (size_t)ws);
	e->size = (size_t)ws;
	free(b);
	free(d);
}

static void add_rule(struct fenv *e, uint32_t ops, uint64_t skip, int error,
		     uint32_t short_bytes)
{
	struct wtio_fault_rule rule = {
		.ops = ops, .skip = skip, .count = 1, .error = error,
		.short_bytes = short_bytes,
	};

	CHECK_OK(wtio_fault_add_rule(e->fault, &rule));
	fault_rounds++;
}

static void random_range(struct fenv *e, off_t *off, size_t *len)
{
	*len = 1 + t_rand_below(&e->r, t_rand_below(&e->r, 2) ? 3000 : 40000);
	*off = (off_t)t_rand_below(&e->r, F_FILE - *len);
}

/*
 * Write-through with EIO/ENOSPC on its I/O number skip: the call sees the
 * error (or a short count, if an earlier I/O of it completed); afterwards
 * reads match the disk; fsync reports EIO once on each handle, and
 * ENOSPC not at all (the writer was told, its write undone).
 */
static void fault_writethrough(struct fenv *e, int err)
{
	off_t off;
	size_t len;
	uint8_t *buf;
	ssize_t n;
	uint64_t before = wtio_fault_injected(e->fault);
	unsigned flags = WTIO_WRITETHROUGH;

	/* No dirty data: a failed write-through then leaves nothing cached
	 * that the disk lacks. */
	CHECK_OK(wtio_fsync(e->f));
	CHECK_OK(wtio_fsync(e->f2));
	random_range(e, &off, &len);
	if (t_rand_below(&e->r, 3) == 0)
		flags |= WTIO_DSYNC;
	if (t_rand_below(&e->r, 3) == 0)
		flags |= WTIO_NOSERIAL;
	buf = t_malloc(len);
	t_fill(buf, len, t_rand(&e->r), (uint64_t)off);
	add_rule(e, WTIO_FAULT_WRITE, t_rand_below(&e->r, 2), err, 0);
	n = wtio_pwrite(e->f, buf, len, off, flags);
	wtio_fault_clear_rules(e->fault);
	nr_ops++;
	if (wtio_fault_injected(e->fault) == before) {
		/* The rule's I/O never came (one I/O only): it succeeded. */
		CHECK_EQ(n, (long long)len);
		memcpy(e->shadow + off, buf, len);
		free(buf);
		return;
	}
	CHECKF(n == -err || (n >= 0 && (size_t)n < len),
	       "write-through with injected %s returned %zd", strerror(err), n);
	check_cache_matches_disk(e, "after failed write-through");
	/* EIO is reported once more by fsync on each handle; a lack of
	 * space is the refused write's alone (nothing dirty was in its
	 * I/O), as with the kernel's write-through: fsync reports none. */
	CHECK_EQ(wtio_fsync(e->f), err == ENOSPC ? 0 : -err);
	CHECK_EQ(wtio_fsync(e->f), 0);
	CHECK_EQ(wtio_fdatasync(e->f2), err == ENOSPC ? 0 : -err);
	CHECK_EQ(wtio_fdatasync(e->f2), 0);
	free(buf);
}

/*
 * Write-back data whose writeback fails: fsync sees the error once per
 * handle, the data stays dirty (served from the cache, retried), and the
 * retry after the rules are gone writes it.
 */
static void fault_writeback(struct fenv *e, int err, bool use_short)
{
	int i, nw = 1 + (int)t_rand_below(&e->r, 6), ret;
	uint64_t before = wtio_fault_injected(e->fault);

	for (i = 0; i < nw; i++) {
		off_t off;
		size_t len;
		uint8_t *buf;

		random_range(e, &off, &len);
		buf = t_malloc(len);
		t_fill(buf, len, t_rand(&e->r), (uint64_t)off);
		CHECK_EQ(wtio_pwrite(e->f, buf, len, off,
				     t_rand_below(&e->r, 4) ? 0 : WTIO_DONTCACHE),
			 (long long)len);
		memcpy(e->shadow + off, buf, len);
		free(buf);
		nr_ops++;
	}
	add_rule(e, WTIO_FAULT_WRITE, t_rand_below(&e->r, 3),
		 use_short ? 0 : err, use_short ? 512 : 0);
	ret = 0;
	if (t_rand_below(&e->r, 2))	/* sometimes the flusher meets it */
		ret = wtio_sync_range(e->f, 0, 0, WTIO_SYNC_RANGE_WRITE |
				      WTIO_SYNC_RANGE_WAIT_AFTER);
	/* sync_range's WAIT_AFTER reports a write-back error to its handle
	 * as Linux's does (errseq: once); fsync then has it to report only
	 * when sync_range did not. */
	if (ret == 0)
		ret = wtio_fsync(e->f);
	else
		CHECK_EQ(wtio_fsync(e->f), 0);
	nr_ops++;
	wtio_fault_clear_rules(e->fault);
	if (use_short || wtio_fault_injected(e->fault) == before) {
		/* A short write is finished by resubmission. */
		CHECK_EQ(ret, 0);
	} else {
		CHECK_EQ(ret, -err);
		/* Still served: the data was not lost from the cache. */
		t_check_wtio_range(e->f, e->shadow, e->size, 0, e->size);
		CHECK_EQ(wtio_fsync(e->f), 0);
		t_check_disk_equals(e->path, e->shadow, e->size);
		CHECK_EQ(wtio_fsync(e->f2), -err);
		CHECK_EQ(wtio_fsync(e->f2), 0);
	}
	t_check_wtio_range(e->f, e->shadow, e->size, 0, e->size);
	CHECK_OK(wtio_fsync(e->f2));
	t_check_disk_equals(e->path, e->shadow, e->size);
}

/* A failed flush (the device's cache flush): fsync sees it once. */
static void fault_flush(struct fenv *e, int err)
{
	uint8_t b = 0x5a;

	CHECK_EQ(wtio_pwrite(e->f, &b, 1, 100, 0), 1);
	e->shadow[100] = b;
	add_rule(e, WTIO_FAULT_FLUSH, 0, err, 0);
	CHECK_EQ(wtio_fsync(e->f), -err);
	wtio_fault_clear_rules(e->fault);
	CHECK_EQ(wtio_fsync(e->f), 0);
	CHECK_EQ(wtio_fsync(e->f2), -err);
	CHECK_EQ(wtio_fsync(e->f2), 0);
	nr_ops += 5;
}

/*
 * Reads: a miss whose read fails returns the error (or a short count) and
 * caches nothing wrong; a short read is completed; a partial-block write
 * whose read-modify-write read fails changes nothing it did not report.
 */
static void fault_read(struct fenv *e, int err, bool use_short)
{
	off_t off;
	size_t len;
	uint8_t *buf;
	ssize_t n;
	uint64_t before;

	/* Drop the cache: close both handles (the last close drops the
	 * inode's folios) and reopen. */
	CHECK_OK(wtio_close(e->f));
	CHECK_OK(wtio_close(e->f2));
	e->f = t_open(e->ctx, e->path, O_RDWR);
	e->f2 = t_open(e->ctx, e->path, O_RDWR);
	random_range(e, &off, &len);
	buf = t_malloc(len);
	before = wtio_fault_injected(e->fault);
	/* A short read is 512 bytes, not the rule's default "half, block
	 * rounded": that is 0 bytes for a one-block read, which any reader
	 * must take for end of file. */
	add_rule(e, WTIO_FAULT_READ, t_rand_below(&e->r, 2),
		 use_short ? 0 : err, use_short ? 512 : 0);
	if (t_rand_below(&e->r, 2)) {
		n = wtio_pread(e->f, buf, len, off, 0);
		wtio_fault_clear_rules(e->fault);
		if (use_short || wtio_fault_injected(e->fault) == before)
			CHECK_EQ(n, (long long)len);
		else
			CHECKF(n == -err || (n >= 0 && (size_t)n < len),
			       "read with injected %s returned %zd",
			       strerror(err), n);
		if (n > 0)
			CHECKF(t_memdiff(buf, e->shadow + off, (size_t)n) < 0,
			       "read %zu @ %lld (%s%s, skip rule) returned %zd "
			       "with bad data at +%lld", len, (long long)off,
			       use_short ? "short" : "error", "", n,
			       t_memdiff(buf, e->shadow + off, (size_t)n));
	} else {
		/* Unaligned: needs its edge blocks read. */
		off |= 1;
		if ((size_t)off + len > F_FILE)
			len = F_FILE - (size_t)off;
		t_fill(buf, len, t_rand(&e->r), (uint64_t)off);
		n = wtio_pwrite(e->f, buf, len, off,
				t_rand_below(&e->r, 2) ? WTIO_WRITETHROUGH : 0);
		wtio_fault_clear_rules(e->fault);
		if (use_short || wtio_fault_injected(e->fault) == before)
			CHECK_EQ(n, (long long)len);
		else
			CHECKF(n == -err || (n >= 0 && (size_t)n < len),
			       "write with failed read-modify-write returned %zd",
			       n);
		if (n > 0)
			memcpy(e->shadow + off, buf, (size_t)n);
	}
	nr_ops++;
	/* Nothing wrong was cached. */
	t_check_wtio_range(e->f, e->shadow, e->size, 0, e->size);
	CHECK_OK(wtio_fsync(e->f));
	CHECK_OK(wtio_fsync(e->f2));
	free(buf);
}

static void fault_run(uint32_t fs, uint64_t budget, uint64_t seed, int rounds)
{
	struct fenv e;
	int i;

	fenv_open(&e, fs, budget, seed);
	for (i = 0; i < rounds; i++) {
		int err = t_rand_below(&e.r, 2) ? EIO : ENOSPC;

		switch (t_rand_below(&e.r, 6)) {
		case 0: fault_writethrough(&e, err); break;
		case 1: fault_writeback(&e, err, false); break;
		case 2: fault_writeback(&e, err, true); break;
		case 3: fault_flush(&e, err); break;
		case 4: fault_read(&e, EIO, false); break;
		default: fault_read(&e, EIO, true); break;
		}
	}
	fenv_close(&e);
}

int main(int argc, char **argv)
{
	t_require_odirect();
	t_watchdog(280, "FAIL: crash_points hung (watchdog)\n");
	if (argc > 1 && !strcmp(argv[1], "adaptive")) {
		adaptive = true;
		crash_run(4096, 32, 21, 8);
		crash_run(4096, 64, 22, 8);
		crash_run(16384, 32, 23, 8);
		printf("crash_points adaptive: %llu crash points, %llu replays "
		       "(%llu torn), %llu ops, %llu adaptive writes written "
		       "through\n", (unsigned long long)crash_points,
		       (unsigned long long)replays,
		       (unsigned long long)torn_replays,
		       (unsigned long long)nr_ops,
		       (unsigned long long)adaptive_wt);
		CHECKF(adaptive_wt > 0, "no adaptive write went write-through: "
		       "the mode's switch was never crashed");
		printf("crash_points adaptive: PASS\n");
		return T_EXIT_PASS;
	}
	if (argc > 1 && !strcmp(argv[1], "large")) {
		large = true;
		/* 1024 units hold 64 folios of 64 KiB: every size from 4
		 * to 64 KiB; 128 units fewer than 64 of 64 KiB, so the
		 * large size is smaller there. */
		uint64_t seed;

		for (seed = 31; seed <= 40; seed++)
			crash_run(4096, seed == 34 ? 128 : 1024 << (seed & 1),
				  seed, 8 + (int)(seed & 3));
		for (seed = 41; seed <= 44; seed++)
			fault_run(4096, seed == 42 ? 128 : 1024, seed, 60);
		printf("crash_points large: %llu crash points, %llu replays "
		       "(%llu torn), %llu fault rules, %llu faults injected, "
		       "%llu ops, %llu of 10 crash runs in large folios\n",
		       (unsigned long long)crash_points,
		       (unsigned long long)replays,
		       (unsigned long long)torn_replays,
		       (unsigned long long)fault_rounds,
		       (unsigned long long)faults_injected,
		       (unsigned long long)nr_ops,
		       (unsigned long long)large_runs);
		CHECKF(large_runs > 0, "no crash run's file had folios larger "
		       "than a block: the large-folio crashes never ran");
		printf("crash_points large: PASS\n");
		return T_EXIT_PASS;
	}
	crash_run(4096, 32, 1, 8);
	crash_run(4096, 1024, 2, 10);
	crash_run(16384, 32, 3, 8);
	crash_run(65536, 64, 4, 8);
	/* Blocks of ours of 8 KiB over 4 KiB ones: the end's block is
	 * written to its 4 KiB block only (the size check above). */
	crash_run(512 << 10, 16, 5, 8);
	fault_run(4096, 64, 11, 60);
	fault_run(4096, 1024, 12, 60);
	fault_run(65536, 32, 13, 60);
	printf("crash_points: %llu crash points, %llu replays (%llu torn, "
	       "%llu torn writes); %llu fault rules, %llu faults injected; "
	       "%llu ops; %llu replays sized past every write (within its "
	       "block): PASS\n",
	       (unsigned long long)crash_points, (unsigned long long)replays,
	       (unsigned long long)torn_replays, (unsigned long long)torn_writes,
	       (unsigned long long)fault_rounds,
	       (unsigned long long)faults_injected, (unsigned long long)nr_ops,
	       (unsigned long long)rounded_sizes);
	return T_EXIT_PASS;
}
