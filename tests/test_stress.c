/* SPDX-License-Identifier: MIT */
/*
 * test_stress.c - many threads on one file, then on many files, mixing
 * every write mode (write-back, write-through, NOSERIAL, DSYNC, DONTCACHE,
 * asynchronous write-through) with readers, fsync and sync_range, under a
 * small cache (eviction and throttling).
 *
 * Data is tagged: every 512-byte record carries (writer, sequence, record
 * number, checksum). Checked on the fly by readers and writers, and at the
 * end on the disk:
 *  - no lost write: each writer owns a region; each record of it holds the
 *    writer's last write there (writers re-read their own records too);
 *  - no torn record or folio: every record's checksum holds, and in the
 *    slots NOSERIAL writers share, the records of one folio within one
 *    slot come from one write;
 *  - no mix of overlapping writes: slots written only by writers without
 *    NOSERIAL are always written whole, and every read of a whole slot
 *    shows a single write.
 * Time-bounded (about 4 s per phase), so it also fits ThreadSanitizer.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"

#define REC	512u
#define NT	8		/* writers */
#define NRD	3		/* readers */
#define OWN	48		/* records each writer owns, per file */
#define SLOT	16		/* records per shared slot */
#define NSLOT	12		/* serial slots; as many NOSERIAL slots */
#define PAD	3		/* records before the shared areas: slots
				 * straddle folios */
#define INIT_W	0xffffu
#define MAXF	6

struct rec {
	uint32_t writer, seq, index, sum;
	uint8_t pay[REC - 16];
};

static const unsigned modes[NT] = {
	0,
	WTIO_WRITETHROUGH,
	WTIO_WRITETHROUGH | WTIO_NOSERIAL,
	WTIO_DSYNC,
	WTIO_WRITETHROUGH | WTIO_DSYNC,
	WTIO_DONTCACHE,
	WTIO_WRITETHROUGH | WTIO_NOSERIAL | WTIO_DONTCACHE,
	WTIO_WRITETHROUGH,	/* through a queue */
};
#define ASYNC_WRITER 7

static struct wtio_ctx *ctx;
static struct wtio_file *files[MAXF];
static int nfiles;
static bool shared_areas;
static uint32_t folio_size;
static struct timespec deadline;
static _Atomic uint64_t n_writes, n_reads, n_records, n_syncs;

static uint32_t rec_sum(const struct rec *r)
{
	uint32_t h = 2166136261u;
	const uint8_t *p = (const uint8_t *)r;
	size_t i;

	for (i = 0; i < REC; i++)
		if (i < 12 || i >= 16)
			h = (h ^ p[i]) * 16777619u;
	return h;
}

static void make_rec(struct rec *r, uint32_t w, uint32_t seq, uint32_t index)
{
	size_t i;

	r->writer = w;
	r->seq = seq;
	r->index = index;
	for (i = 0; i < sizeof(r->pay); i++)
		r->pay[i] = (uint8_t)(w * 31 + seq * 7 + index * 3 + i);
	r->sum = rec_sum(r);
}

/* A record read back: intact and in its place. */
static void check_rec(const struct rec *r, uint32_t index, const char *where)
{
	CHECKF(r->sum == rec_sum(r) && r->index == index,
	       "%s: record %u torn or misplaced (writer %u seq %u index %u)",
	       where, index, r->writer, r->seq, r->index);
	atomic_fetch_add_explicit(&n_records, 1, memory_order_relaxed);
}

static uint32_t own_first(int w)
{
	return (uint32_t)w * OWN;
}

static uint32_t serial_first(int slot)
{
	return NT * OWN + PAD + (uint32_t)slot * SLOT;
}

static uint32_t noserial_first(int slot)
{
	return serial_first(NSLOT) + (uint32_t)slot * SLOT;
}

static uint32_t file_records(void)
{
	return shared_areas ? noserial_first(NSLOT) : NT * OWN;
}

static bool past_deadline(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

struct writer {
	int id;
	unsigned flags;
	uint32_t seq;
	uint32_t last[MAXF][OWN];	/* own records: last seq written */
	struct wtio_queue *q;
	struct t_rng r;
};

static void do_write(struct writer *w, struct wtio_file *f, const void *buf,
		     size_t len, off_t off)
{
	if (w->q) {
		struct wtio_cqe cqe;

		CHECK_OK(wtio_queue_pwrite(w->q, f, buf, len, off, w->flags, 0));
		CHECK_EQ(wtio_queue_reap(w->q, &cqe, 1, 1, -1), 1);
		CHECK_EQ(cqe.res, (long long)len);
	} else {
		CHECK_EQ(wtio_pwrite(f, buf, len, off, w->flags), (long long)len);
	}
	atomic_fetch_add_explicit(&n_writes, 1, memory_order_relaxed);
}

/* Fill n records from first with (writer, seq). */
static struct rec *fill(struct rec *v, int n, uint32_t w, uint32_t seq,
			uint32_t first)
{
	int i;

	for (i = 0; i < n; i++)
		make_rec(&v[i], w, seq, first + (uint32_t)i);
	return v;
}

static void check_slot_single(const struct rec *v, uint32_t first,
			      const char *where)
{
	int i;

	for (i = 0; i < SLOT; i++) {
		check_rec(&v[i], first + (uint32_t)i, where);
		CHECKF(v[i].writer == v[0].writer && v[i].seq == v[0].seq,
		       "%s: slot at record %u mixes writes: record 0 (%u,%u), "
		       "record %d (%u,%u)", where, first, v[0].writer, v[0].seq,
		       i, v[i].writer, v[i].seq);
	}
}

static void check_slot_folios(const struct rec *v, uint32_t first,
			      const char *where)
{
	int i, j;

	for (i = 0; i < SLOT; i++) {
		check_rec(&v[i], first + (uint32_t)i, where);
		for (j = 0; j < i; j++) {
			uint64_t fi = ((uint64_t)(first + (uint32_t)i) * REC) / folio_size;
			uint64_t fj = ((uint64_t)(first + (uint32_t)j) * REC) / folio_size;

			if (fi != fj)
				continue;
			CHECKF(v[i].writer == v[j].writer && v[i].seq == v[j].seq,
			       "%s: torn folio %llu in NOSERIAL slot at record %u: "
			       "(%u,%u) vs (%u,%u)", where, (unsigned long long)fi,
			       first, v[j].writer, v[j].seq, v[i].writer, v[i].seq);
		}
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct rec *v = t_malloc(SLOT * sizeof(struct rec));
	struct rec *rb = t_malloc(SLOT * sizeof(struct rec));

	if (w->id == ASYNC_WRITER)
		CHECK_OK(wtio_queue_create(ctx, 4, &w->q));
	while (!past_deadline()) {
		int fi = (int)t_rand_below(&w->r, (uint64_t)nfiles);
		struct wtio_file *f = files[fi];
		uint64_t what = t_rand_below(&w->r, 100);

		if (what < 45 || (!shared_areas && what < 97)) {
			/* Own records: 1..4 consecutive, then maybe re-read. */
			int n = 1 + (int)t_rand_below(&w->r, 4), i;
			uint32_t k = (uint32_t)t_rand_below(&w->r, OWN - (uint64_t)n + 1);
			uint32_t first = own_first(w->id) + k;

			w->seq++;
			do_write(w, f, fill(v, n, (uint32_t)w->id, w->seq, first),
				 (size_t)n * REC, (off_t)first * REC);
			for (i = 0; i < n; i++)
				w->last[fi][k + (uint32_t)i] = w->seq;
			if (t_rand_below(&w->r, 3) == 0) {
				CHECK_EQ(wtio_pread(f, rb, (size_t)n * REC,
						    (off_t)first * REC, 0),
					 (long long)n * REC);
				CHECKF(memcmp(rb, v, (size_t)n * REC) == 0,
				       "writer %d: own records %u+%d read back "
				       "differ (writer %u seq %u)", w->id, first,
				       n, rb[0].writer, rb[0].seq);
				atomic_fetch_add_explicit(&n_reads, 1,
							  memory_order_relaxed);
			}
		} else if (what < 80) {
			/* A whole shared slot. */
			int s = (int)t_rand_below(&w->r, NSLOT);
			bool ns = (w->flags & WTIO_NOSERIAL) ||
				  t_rand_below(&w->r, 3) == 0;
			uint32_t first = ns ? noserial_first(s) : serial_first(s);

			w->seq++;
			do_write(w, f, fill(v, SLOT, (uint32_t)w->id, w->seq, first),
				 SLOT * REC, (off_t)first * REC);
		} else if (what < 97) {
			/* Read a slot back. */
			int s = (int)t_rand_below(&w->r, NSLOT);
			bool ns = t_rand_below(&w->r, 2);
			uint32_t first = ns ? noserial_first(s) : serial_first(s);

			CHECK_EQ(wtio_pread(f, rb, SLOT * REC, (off_t)first * REC,
					    0), SLOT * REC);
			if (ns)
				check_slot_folios(rb, first, "writer read");
			else
				check_slot_single(rb, first, "writer read");
			atomic_fetch_add_explicit(&n_reads, 1, memory_order_relaxed);
		} else if (what < 99) {
			CHECK_OK(t_rand_below(&w->r, 2) ? wtio_fsync(f) :
				 wtio_fdatasync(f));
			atomic_fetch_add_explicit(&n_syncs, 1, memory_order_relaxed);
		} else {
			CHECK_OK(wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WRITE |
						 WTIO_SYNC_RANGE_WAIT_AFTER));
			atomic_fetch_add_explicit(&n_syncs, 1, memory_order_relaxed);
		}
	}
	if (w->q)
		CHECK_OK(wtio_queue_destroy(w->q));
	free(v);
	free(rb);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct t_rng r = { 900 + (uint64_t)(uintptr_t)arg };
	struct rec *v = t_malloc(SLOT * sizeof(struct rec));

	while (!past_deadline()) {
		struct wtio_file *f = files[t_rand_below(&r, (uint64_t)nfiles)];
		uint64_t what = t_rand_below(&r, 3);
		unsigned flags = t_rand_below(&r, 4) ? 0 : WTIO_DONTCACHE;

		if (what == 0 || !shared_areas) {
			/* Any run of own records: each intact. */
			uint32_t first = (uint32_t)t_rand_below(&r, NT * OWN - SLOT);
			int i;

			CHECK_EQ(wtio_pread(f, v, SLOT * REC, (off_t)first * REC,
					    flags), SLOT * REC);
			for (i = 0; i < SLOT; i++) {
				uint32_t idx = first + (uint32_t)i;

				check_rec(&v[i], idx, "reader");
				CHECKF(v[i].writer == INIT_W ||
				       v[i].writer == idx / OWN,
				       "record %u of writer %u's region written "
				       "by %u", idx, idx / OWN, v[i].writer);
			}
		} else {
			int s = (int)t_rand_below(&r, NSLOT);
			uint32_t first = what == 1 ? serial_first(s) :
				noserial_first(s);

			CHECK_EQ(wtio_pread(f, v, SLOT * REC, (off_t)first * REC,
					    flags), SLOT * REC);
			if (what == 1)
				check_slot_single(v, first, "reader");
			else
				check_slot_folios(v, first, "reader");
		}
		atomic_fetch_add_explicit(&n_reads, 1, memory_order_relaxed);
	}
	free(v);
	return NULL;
}

static void phase(const char *name, uint32_t fs, uint64_t budget, int nf,
		  bool shared, int seconds)
{
	static struct writer w[NT];
	const char *paths[MAXF];
	pthread_t th[NT + NRD];
	uint32_t nrec, i;
	struct rec *init;
	int k, t;

	folio_size = fs;
	nfiles = nf;
	shared_areas = shared;
	ctx = t_ctx(fs, budget, WTIO_BACKEND_AUTO);
	nrec = file_records();
	init = t_malloc(nrec * sizeof(struct rec));
	for (i = 0; i < nrec; i++)
		make_rec(&init[i], INIT_W, 0, i);
	for (k = 0; k < nf; k++) {
		paths[k] = t_tmpfile("stress");
		files[k] = t_open(ctx, paths[k], O_RDWR);
		CHECK_EQ(wtio_pwrite(files[k], init, nrec * REC, 0, 0),
			 (long long)nrec * REC);
	}
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += seconds;
	for (t = 0; t < NT; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].id = t;
		w[t].flags = modes[t];
		w[t].r.s = 77 + (uint64_t)t * 1000 + fs;
		CHECK_OK(pthread_create(&th[t], NULL, writer_main, &w[t]));
	}
	for (t = 0; t < NRD; t++)
		CHECK_OK(pthread_create(&th[NT + t], NULL, reader_main,
					(void *)(uintptr_t)t));
	for (t = 0; t < NT + NRD; t++)
		CHECK_OK(pthread_join(th[t], NULL));

	/* The disk: every own record holds its writer's last write; slots
	 * as on the fly. */
	for (k = 0; k < nf; k++) {
		size_t dlen;
		struct rec *d;

		CHECK_OK(wtio_close(files[k]));
		d = (struct rec *)t_read_disk(paths[k], &dlen);
		CHECK_EQ(dlen, (size_t)nrec * REC);
		for (t = 0; t < NT; t++) {
			for (i = 0; i < OWN; i++) {
				uint32_t idx = own_first(t) + i;
				uint32_t want = w[t].last[k][i];

				check_rec(&d[idx], idx, "disk");
				CHECKF(want ? (d[idx].writer == (uint32_t)t &&
					       d[idx].seq == want) :
				       d[idx].writer == INIT_W,
				       "lost write: file %d record %u holds (%u,%u), "
				       "writer %d last wrote seq %u", k, idx,
				       d[idx].writer, d[idx].seq, t, want);
			}
		}
		if (shared) {
			for (t = 0; t < NSLOT; t++) {
				check_slot_single(&d[serial_first(t)],
						  serial_first(t), "disk");
				check_slot_folios(&d[noserial_first(t)],
						  noserial_first(t), "disk");
			}
		}
		free(d);
		unlink(paths[k]);
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(init);
	printf("  %s: folio %u, %d file(s): %llu writes, %llu reads, %llu "
	       "records checked, %llu syncs so far\n", name, fs, nf,
	       (unsigned long long)n_writes, (unsigned long long)n_reads,
	       (unsigned long long)n_records, (unsigned long long)n_syncs);
}

int main(void)
{
	t_require_odirect();
	t_watchdog(200, "FAIL: stress hung (watchdog)\n");
	phase("one file", 4096, 64, 1, true, 4);
	phase("one file", 65536, 32, 1, true, 2);
	phase("many files", 16384, 64, MAXF, false, 3);
	printf("stress: %d writers + %d readers: %llu writes, %llu reads, %llu "
	       "records checked, %llu syncs: PASS\n", NT, NRD,
	       (unsigned long long)n_writes, (unsigned long long)n_reads,
	       (unsigned long long)n_records, (unsigned long long)n_syncs);
	return T_EXIT_PASS;
}
