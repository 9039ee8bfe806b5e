/* SPDX-License-Identifier: MIT */
/*
 * test_read_slots.c - the checker for cache hits found through the
 * inode's own index (src/inode_slots.h; docs/DESIGN.md, "The inode's
 * slots"). A slot is only a hint: a lockless reader checks the folio it
 * names (identity, seq) and trusts nothing else. ThreadSanitizer cannot
 * see that path, so this test does, in the plain and ASan builds.
 *
 * One mutator thread changes a file of NR_REC 4 KiB records, each op
 * logged before it starts: a record rewritten with a new generation
 * (write-back, or NOSERIAL write-through, which races the lockless hit
 * under the shared lock), or a truncate to a random record boundary
 * followed by an extension back to the full size (holes: zeros). Every
 * 8-byte word carries (generation, record). A churn thread reads another
 * file through a 32-folio cache, evicting this file's folios and reusing
 * them (and the other file is closed and reopened now and then, so its
 * slot chunks go back to the pool and are taken again). Readers read
 * single records: a read must return the record whole, of one value
 * (zeros, end of file, or one generation of the right record) that the
 * record held at some moment between the read's start and its end.
 *
 * Every run, for 4 KiB and 16 KiB folios, first shows the checker's
 * power and what protects the reader:
 *  1. with slots left set when their folio leaves (WTIO_TP_SLOT_KEEP)
 *     and the hit's identity check skipped (WTIO_TP_HIT_IDENTITY), it
 *     must see misplaced or stale reads;
 *  2. with the slots left set but the identity check as built, it must
 *     see none while readers did find stale slots;
 *  3. as built: none, with hits served through the slots.
 * Under ThreadSanitizer only the locked path exists (WTIO_TSAN): phase 3
 * runs and the test exits 77.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"
#include "folio.h"
#include "test_hooks.h"

#define REC 4096u
#define WORDS (REC / 8)
#define NR_REC 24u
#define NR_OTHER 64u
#define NREADERS 2
#define MAX_OPS (1u << 16)
#define RUN_MS 1000ull
#define SABOTAGE_MS 5000ull
#define V_ZERO 0ull
#define V_EOF UINT64_MAX

/* One change: records [lo, hi) hold val once it is done. */
struct op {
	uint32_t lo, hi;
	uint64_t val;
};

static struct op oplog[MAX_OPS];
static _Atomic uint32_t started, done;
static struct wtio_file *file, *other;
static char path[64], opath[64];
static _Atomic bool stop, keep_slots, skip_identity, skip_lookup,
	skip_read_identity, locked_readers;
static _Atomic uint64_t bad, reads, slot_hits, slot_stale, hit_ok,
	lookup_slot, lookup_stale;
/* Only a read's first lookup is sabotaged: a writer's, or a read's
 * retry, that trusted a kept slot would find the same wrong folio again
 * and again (they check its identity under its lock and look up again). */
static _Thread_local bool skip_next_lookup;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	(void)f;
	switch (tp) {
	case WTIO_TP_SLOT_KEEP:
		return atomic_load_explicit(&keep_slots, memory_order_relaxed);
	case WTIO_TP_HIT_IDENTITY:
		return atomic_load_explicit(&skip_identity,
					    memory_order_relaxed);
	case WTIO_TP_SLOT_HIT:
		atomic_fetch_add_explicit(&slot_hits, 1, memory_order_relaxed);
		break;
	case WTIO_TP_SLOT_STALE:
		atomic_fetch_add_explicit(&slot_stale, 1, memory_order_relaxed);
		break;
	case WTIO_TP_HIT_OK:
		atomic_fetch_add_explicit(&hit_ok, 1, memory_order_relaxed);
		break;
	case WTIO_TP_LOOKUP_SLOT: {
		bool skip = skip_next_lookup;

		atomic_fetch_add_explicit(&lookup_slot, 1,
					  memory_order_relaxed);
		skip_next_lookup = false;
		return skip;
	}
	case WTIO_TP_READ_IDENTITY:
		return atomic_load_explicit(&skip_read_identity,
					    memory_order_relaxed);
	case WTIO_TP_LOOKUP_STALE:
		atomic_fetch_add_explicit(&lookup_stale, 1,
					  memory_order_relaxed);
		break;
	default:
		break;
	}
	return 0;
}

static uint64_t word(uint64_t gen, uint64_t rec)
{
	return (gen << 16) | rec;
}

/* Log the op, say it started, do it, say it is done. */
static void op_begin(uint32_t lo, uint32_t hi, uint64_t val)
{
	uint32_t n = atomic_load_explicit(&started, memory_order_relaxed);

	oplog[n] = (struct op){ lo, hi, val };
	atomic_store_explicit(&started, n + 1, memory_order_release);
}

static void op_end(void)
{
	atomic_fetch_add_explicit(&done, 1, memory_order_release);
}

static void write_rec(uint64_t *buf, uint32_t rec, uint64_t gen,
		      unsigned int flags)
{
	unsigned int k;

	for (k = 0; k < WORDS; k++)
		buf[k] = word(gen, rec);
	op_begin(rec, rec + 1, word(gen, rec));
	CHECK_EQ(wtio_pwrite(file, buf, REC, (off_t)rec * REC, flags), REC);
	op_end();
}

static void *mutator(void *arg)
{
	uint64_t *buf = aligned_alloc(4096, REC), gen = 1000;
	unsigned int seed = 17;

	(void)arg;
	CHECK(buf);
	while (!atomic_load(&stop) &&
	       atomic_load(&started) + 2 < MAX_OPS) {
		unsigned int r = (unsigned int)rand_r(&seed);

		if (r % 8) {
			write_rec(buf, r / 8 % NR_REC, ++gen,
				  r % 2 ? WTIO_WRITETHROUGH | WTIO_NOSERIAL : 0);
		} else {
			uint32_t cut = NR_REC / 2 + r / 8 % (NR_REC / 2);

			op_begin(cut, NR_REC, V_EOF);
			CHECK_OK(wtio_ftruncate(file, (off_t)cut * REC));
			op_end();
			op_begin(cut, NR_REC, V_ZERO);
			CHECK_OK(wtio_ftruncate(file, (off_t)NR_REC * REC));
			op_end();
		}
	}
	free(buf);
	return NULL;
}

/* What record rec held once ops [0, n) were done. */
static uint64_t value_at(uint32_t rec, uint32_t n)
{
	while (n-- > 0)
		if (oplog[n].lo <= rec && rec < oplog[n].hi)
			return oplog[n].val;
	return V_ZERO;
}

/* Did rec hold v at some moment while ops [s, e) ran? */
static bool held(uint32_t rec, uint64_t v, uint32_t s, uint32_t e)
{
	uint32_t n;

	if (value_at(rec, s) == v)
		return true;
	for (n = s; n < e; n++)
		if (oplog[n].lo <= rec && rec < oplog[n].hi &&
		    oplog[n].val == v)
			return true;
	return false;
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u;
	uint64_t *buf = malloc(REC);
	/* The second reader, or all of them, read drop-behind: the locked
	 * path, through wtio_folio_lookup, dropping what readahead brought. */
	bool locked = (uintptr_t)arg % 2 == 0 || atomic_load(&locked_readers);

	CHECK(buf);
	while (!atomic_load(&stop)) {
		uint32_t rec = (uint32_t)rand_r(&seed) % NR_REC;
		uint32_t s = atomic_load_explicit(&done, memory_order_acquire);
		ssize_t got;

		skip_next_lookup = atomic_load(&skip_lookup);
		got = wtio_pread(file, buf, REC, (off_t)rec * REC,
				 locked ? WTIO_DONTCACHE : 0);
		uint32_t e = atomic_load_explicit(&started,
						  memory_order_acquire);
		uint64_t v = V_EOF;
		unsigned int k;

		CHECKF(got == 0 || got == REC, "read of record %u: %zd", rec,
		       got);
		if (got == REC) {
			v = buf[0];
			for (k = 1; k < WORDS && buf[k] == v; k++)
				;
			if (k < WORDS)
				v = V_EOF - 1;	/* torn: held by no record */
		}
		if (!held(rec, v, s, e)) {
			if (!atomic_fetch_add(&bad, 1))
				printf("  record %u read as %#llx, ops %u..%u\n",
				       rec, (unsigned long long)v, s, e);
		}
		atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
	}
	free(buf);
	return NULL;
}

static void open_other(struct wtio_ctx *ctx, bool create)
{
	CHECK_OK(wtio_open(ctx, opath, O_RDWR | (create ? O_CREAT | O_TRUNC : 0),
			   0644, 0, &other));
}

static void *churn(void *arg)
{
	struct wtio_ctx *ctx = arg;
	char *buf = malloc(4 * REC);
	unsigned int seed = 99, n = 0;

	CHECK(buf);
	while (!atomic_load(&stop)) {
		off_t off = (off_t)(rand_r(&seed) % (NR_OTHER - 4)) * REC;

		CHECK_EQ(wtio_pread(other, buf, 4 * REC, off, 0), 4 * REC);
		if (++n % 256 == 0) {
			CHECK_OK(wtio_close(other));
			open_other(ctx, false);
		}
	}
	free(buf);
	return NULL;
}

/* One phase on a fresh context: ms of mutator, readers and churn (or
 * until a bad read, with until_bad). */
static void phase(uint32_t folio_size, uint64_t ms, bool until_bad)
{
	uint64_t *buf = aligned_alloc(4096, REC), end;
	pthread_t m, r[NREADERS], c;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	unsigned int i, k;

	CHECK(buf);
	wtio_config_init(&cfg);
	cfg.folio_size = folio_size;
	cfg.cache_size = 32ull * folio_size;
	cfg.readahead_max = 4 * folio_size;
	cfg.flags |= WTIO_CONFIG_DONTCACHE_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &file));
	open_other(ctx, true);
	atomic_store(&started, 0);
	atomic_store(&done, 0);
	for (i = 0; i < NR_REC; i++)
		write_rec(buf, i, 1, 0);
	for (i = 0; i < NR_OTHER; i++) {
		for (k = 0; k < WORDS; k++)
			buf[k] = word(0xdead, 0x8000 + i);	/* never ours */
		CHECK_EQ(wtio_pwrite(other, buf, REC, (off_t)i * REC, 0), REC);
	}
	CHECK_OK(wtio_fsync(file));
	CHECK_OK(wtio_fsync(other));
	free(buf);
	atomic_store(&stop, false);
	CHECK_OK(pthread_create(&m, NULL, mutator, NULL));
	for (i = 0; i < NREADERS; i++)
		CHECK_OK(pthread_create(&r[i], NULL, reader,
					(void *)(uintptr_t)(i + 1)));
	CHECK_OK(pthread_create(&c, NULL, churn, ctx));
	end = t_now_ms() + ms;
	while (t_now_ms() < end && !(until_bad && atomic_load(&bad)))
		usleep(1000);
	atomic_store(&stop, true);
	pthread_join(m, NULL);
	for (i = 0; i < NREADERS; i++)
		pthread_join(r[i], NULL);
	pthread_join(c, NULL);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_close(other));
	CHECK_OK(wtio_ctx_destroy(ctx));
}

static void reset(void)
{
	atomic_store(&bad, 0);
	atomic_store(&reads, 0);
	atomic_store(&slot_hits, 0);
	atomic_store(&slot_stale, 0);
	atomic_store(&hit_ok, 0);
	atomic_store(&lookup_slot, 0);
	atomic_store(&lookup_stale, 0);
}

static void report(const char *what, uint32_t fs)
{
	printf("%s, %u KiB folios: %llu reads, %llu bad; slot hits %llu, "
	       "stale slots %llu, lockless hits %llu, slot lookups %llu "
	       "(stale %llu), %u ops\n", what,
	       fs >> 10, (unsigned long long)reads, (unsigned long long)bad,
	       (unsigned long long)slot_hits, (unsigned long long)slot_stale,
	       (unsigned long long)hit_ok, (unsigned long long)lookup_slot,
	       (unsigned long long)lookup_stale, atomic_load(&done));
}

/*
 * The lookup that takes a reference without the bucket lock
 * (src/cache_peek.c and cache.c, lookup_slot), read through by
 * drop-behind readers (the locked read path, wtio_folio_lookup), with
 * slots left set when their folio leaves. Two checks stand between a stale slot and a misplaced
 * read: the lookup's second look at the slot and the read's check of
 * the folio's identity under its lock. With both skipped (for a read's
 * first lookup) it must see misplaced records; with either one alone,
 * none; as built, none, while lookups did meet stale slots. Atomics
 * only: the last part runs under ThreadSanitizer too.
 */
static void lookup_phase(uint32_t fs, bool lookup_check, bool read_check,
			 uint64_t ms)
{
	reset();
	atomic_store(&skip_lookup, !lookup_check);
	atomic_store(&skip_read_identity, !read_check);
	phase(fs, ms, !lookup_check && !read_check);
	printf("lookup's check %s, read's %s: ", lookup_check ? "on" : "off",
	       read_check ? "on" : "off");
	report("slots kept", fs);
	atomic_store(&skip_lookup, false);
	atomic_store(&skip_read_identity, false);
	if (!lookup_check && !read_check) {
		CHECKF(bad > 0, "no bad read in %llu ms with stale slots "
		       "trusted: this test cannot see what it looks for",
		       (unsigned long long)ms);
		return;
	}
	CHECKF(bad == 0, "%llu bad reads", (unsigned long long)bad);
	if (lookup_check)
		CHECKF(lookup_stale > 0, "no lookup met a stale slot: the "
		       "race was not exercised");
}

static void run_lookup(uint32_t fs)
{
	atomic_store(&keep_slots, true);
	atomic_store(&locked_readers, true);
	if (!WTIO_TSAN) {
		lookup_phase(fs, false, false, SABOTAGE_MS);
		lookup_phase(fs, true, false, RUN_MS);
		lookup_phase(fs, false, true, RUN_MS);
	}
	lookup_phase(fs, true, true, WTIO_TSAN ? RUN_MS / 4 : RUN_MS);
	atomic_store(&keep_slots, false);
	atomic_store(&locked_readers, false);
}

static void run(uint32_t fs)
{
	run_lookup(fs);
	if (!WTIO_TSAN) {
		reset();
		atomic_store(&keep_slots, true);
		atomic_store(&skip_identity, true);
		phase(fs, SABOTAGE_MS, true);
		report("slots kept, identity unchecked", fs);
		CHECKF(bad > 0, "no bad read in %llu ms with stale slots "
		       "trusted: this test cannot see what it looks for",
		       (unsigned long long)SABOTAGE_MS);

		reset();
		atomic_store(&skip_identity, false);
		phase(fs, RUN_MS, false);
		report("slots kept, identity checked", fs);
		CHECKF(bad == 0, "%llu bad reads", (unsigned long long)bad);
		CHECKF(slot_stale > 0, "no reader found a stale slot: the "
		       "race was not exercised");
		atomic_store(&keep_slots, false);
	}
	reset();
	phase(fs, WTIO_TSAN ? RUN_MS / 4 : RUN_MS, false);
	report("as built", fs);
	CHECKF(bad == 0, "%llu bad reads", (unsigned long long)bad);
	CHECK(reads > 0);
	if (!WTIO_TSAN) {
		CHECKF(slot_hits > 0, "no folio found through a slot");
		CHECKF(hit_ok > 0, "no read served by the lockless hit");
	}
	CHECKF(lookup_slot > 0, "no folio referenced through a slot");
}

int main(void)
{
	t_watchdog(120, "test_read_slots: hung\n");
	snprintf(path, sizeof(path), "read_slots.%d", (int)getpid());
	snprintf(opath, sizeof(opath), "read_slots.%d.other", (int)getpid());
	wtio_test_hook = hook;
	run(4096);
	run(16384);
	wtio_test_hook = NULL;
	unlink(path);
	unlink(opath);
	if (WTIO_TSAN)
		t_skip("the lockless hit is not compiled under ThreadSanitizer "
		       "(WTIO_TSAN); only the locked path was checked");
	printf("PASS: every read one value its record held during the read, "
	       "under writes, truncates, eviction and slot reuse\n");
	return T_EXIT_PASS;
}
