/* SPDX-License-Identifier: MIT */
/*
 * test_seqcount.c - the checker for the lockless cache hit (issue 16,
 * defect 7). ThreadSanitizer cannot check that path (a seqcount-checked
 * racy copy looks like a bug to it), so this test does, in the plain and
 * ASan builds: writers keep rewriting a few cached folios whole, every
 * 8-byte word carrying (version, folio), while readers hit the cache with
 * reads of random length and offset. Every word of a read must carry one
 * version of the right folio, no older than the last write that returned
 * before the read began and no newer than the last one begun after it.
 *
 * The writers are NOSERIAL write-through ones: they hold the file lock
 * shared, as readers do, and copy under the folio lock only, so they
 * race the lockless hit (a write-back write holds the file lock
 * exclusive and cannot).
 *
 * It links the library built with test hooks (WTIO_TEST_HOOKS) to show
 * that it has the power to see what it looks for, every run:
 *  1. with the seq re-check skipped (the hook at WTIO_TP_HIT_COPIED keeps
 *     every copy), it must see torn reads: the race happens here;
 *  2. with the re-check, none in RUN_MS, and the hook must have counted
 *     copies thrown away by the re-check (writers did overlap readers)
 *     as well as copies kept (the lockless path served reads).
 * Under ThreadSanitizer the lockless path is not compiled (WTIO_TSAN):
 * the locked path is checked the same way and the test exits 77.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "folio.h"
#include "test_hooks.h"

#define FS 4096u
#define NR_FOLIOS 4u
#define NW 2
#define NR 2
#define RUN_MS 2000ull
#define SABOTAGE_MS 5000ull

static struct wtio_file *file;
static _Atomic uint64_t started[NR_FOLIOS], done[NR_FOLIOS];
static _Atomic bool stop, sabotage;
static _Atomic uint64_t torn, reads, hit_ok, hit_retry;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	switch (tp) {
	case WTIO_TP_HIT_COPIED:
		return atomic_load_explicit(&sabotage, memory_order_relaxed);
	case WTIO_TP_HIT_RETRY:
		atomic_fetch_add_explicit(&hit_retry, 1, memory_order_relaxed);
		break;
	case WTIO_TP_HIT_OK:
		atomic_fetch_add_explicit(&hit_ok, 1, memory_order_relaxed);
		break;
	default:
		break;
	}
	return 0;
}

static uint64_t word(uint64_t ver, uint64_t folio)
{
	return (ver << 8) | folio;
}

static void *writer(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg, seed = id + 1;
	uint64_t *buf = aligned_alloc(4096, FS);
	struct iovec iov[FS / 8];
	unsigned int k;

	CHECK(buf);
	for (k = 0; k < FS / 8; k++)
		iov[k] = (struct iovec){ buf + k, 8 };
	while (!atomic_load(&stop)) {
		/* Writer id owns folios id, id + NW, ...: versions grow. */
		uint64_t fo = (rand_r(&seed) % (NR_FOLIOS / NW)) * NW + id;
		uint64_t ver = atomic_load(&done[fo]) + 1;

		for (k = 0; k < FS / 8; k++)
			buf[k] = word(ver, fo);
		atomic_store(&started[fo], ver);
		/* One iovec a word: the copy into the folio takes long
		 * enough for readers to land in the middle of it. */
		CHECK_EQ(wtio_pwritev(file, iov, FS / 8, (off_t)(fo * FS),
				      WTIO_WRITETHROUGH | WTIO_NOSERIAL), FS);
		atomic_store(&done[fo], ver);
	}
	free(buf);
	return NULL;
}

/* Words [w0, w1) of folio fo as read: one version, the right folio, in
 * [floor, ceil]. Returns false (and counts) on a tear or a bad word. */
static bool check_part(const uint64_t *p, uint64_t fo, unsigned int n,
		       uint64_t floor, uint64_t ceil)
{
	uint64_t ver = p[0] >> 8;
	unsigned int k;

	for (k = 0; k < n; k++) {
		if (p[k] != p[0]) {
			atomic_fetch_add(&torn, 1);
			return false;
		}
	}
	CHECKF((p[0] & 0xff) == fo, "folio %llu holds folio %llu's data",
	       (unsigned long long)fo, (unsigned long long)(p[0] & 0xff));
	CHECKF(ver >= floor && ver <= ceil, "folio %llu: version %llu, "
	       "want %llu..%llu", (unsigned long long)fo,
	       (unsigned long long)ver, (unsigned long long)floor,
	       (unsigned long long)ceil);
	return true;
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u;
	uint64_t *buf = malloc(2 * FS);
	struct iovec iov[2 * FS / 8];
	unsigned int k;

	CHECK(buf);
	for (k = 0; k < 2 * FS / 8; k++)
		iov[k] = (struct iovec){ buf + k, 8 };
	while (!atomic_load(&stop)) {
		/* Word-aligned ranges of 1 word to 2 folios' worth. */
		uint64_t w0 = rand_r(&seed) % ((NR_FOLIOS - 1) * FS / 8);
		uint64_t nw = 1 + rand_r(&seed) % (2 * FS / 8);
		uint64_t floor[NR_FOLIOS], ceil[NR_FOLIOS], w;
		unsigned int i;

		if (w0 + nw > NR_FOLIOS * FS / 8)
			nw = NR_FOLIOS * FS / 8 - w0;
		for (i = 0; i < NR_FOLIOS; i++)
			floor[i] = atomic_load(&done[i]);
		/* Every other read one iovec a word: a slow copy. */
		if (rand_r(&seed) & 1)
			CHECK_EQ(wtio_preadv(file, iov, (int)nw,
					     (off_t)(w0 * 8), 0), nw * 8);
		else
			CHECK_EQ(wtio_pread(file, buf, nw * 8,
					    (off_t)(w0 * 8), 0), nw * 8);
		for (i = 0; i < NR_FOLIOS; i++)
			ceil[i] = atomic_load(&started[i]);
		for (w = 0; w < nw;) {
			uint64_t fo = (w0 + w) / (FS / 8);
			uint64_t end = (fo + 1) * (FS / 8) - w0;

			if (end > nw)
				end = nw;
			check_part(buf + w, fo, (unsigned int)(end - w),
				   floor[fo], ceil[fo]);
			w = end;
		}
		atomic_fetch_add(&reads, 1);
	}
	free(buf);
	return NULL;
}

/* Run writers and readers until ms passed (or, with until_torn, a tear
 * was seen). */
static void run(uint64_t ms, bool until_torn)
{
	pthread_t w[NW], r[NR];
	uint64_t end = t_now_ms() + ms;
	unsigned int i;

	atomic_store(&stop, false);
	for (i = 0; i < NW; i++)
		CHECK_OK(pthread_create(&w[i], NULL, writer, (void *)(uintptr_t)i));
	for (i = 0; i < NR; i++)
		CHECK_OK(pthread_create(&r[i], NULL, reader,
					(void *)(uintptr_t)(i + 1)));
	while (t_now_ms() < end && !(until_torn && atomic_load(&torn)))
		usleep(1000);
	atomic_store(&stop, true);
	for (i = 0; i < NW; i++)
		pthread_join(w[i], NULL);
	for (i = 0; i < NR; i++)
		pthread_join(r[i], NULL);
}

int main(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	uint64_t *buf = aligned_alloc(4096, FS);
	char path[64];
	unsigned int i, k;

	t_watchdog(120, "test_seqcount: hung\n");
	CHECK(buf);
	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = 64ull * FS;
	cfg.flags = WTIO_CONFIG_NO_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	snprintf(path, sizeof(path), "seqcount.%d", (int)getpid());
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &file));
	unlink(path);
	for (i = 0; i < NR_FOLIOS; i++) {
		for (k = 0; k < FS / 8; k++)
			buf[k] = word(1, i);
		atomic_store(&started[i], 1);
		atomic_store(&done[i], 1);
		CHECK_EQ(wtio_pwrite(file, buf, FS, (off_t)(i * FS), 0), FS);
	}
	free(buf);
	wtio_test_hook = hook;

	if (!WTIO_TSAN) {
		/* 1: without the re-check, the checker must see tears. */
		atomic_store(&sabotage, true);
		run(SABOTAGE_MS, true);
		printf("re-check skipped: %llu reads, %llu torn, %llu "
		       "lockless, %llu writes\n", (unsigned long long)reads,
		       (unsigned long long)torn, (unsigned long long)hit_ok,
		       (unsigned long long)(atomic_load(&done[0]) +
					    atomic_load(&done[1]) +
					    atomic_load(&done[2]) +
					    atomic_load(&done[3])));
		CHECKF(torn > 0, "no torn read in %llu ms with the seq re-check "
		       "skipped: this test cannot see what it looks for",
		       (unsigned long long)SABOTAGE_MS);
		atomic_store(&sabotage, false);
		atomic_store(&torn, 0);
		atomic_store(&reads, 0);
		atomic_store(&hit_ok, 0);
		atomic_store(&hit_retry, 0);
	}
	/* 2: as built. */
	run(WTIO_TSAN ? RUN_MS / 4 : RUN_MS, false);
	wtio_test_hook = NULL;
	printf("re-check on: %llu reads, %llu torn; lockless hits kept %llu, "
	       "thrown away by the re-check %llu\n",
	       (unsigned long long)reads, (unsigned long long)torn,
	       (unsigned long long)hit_ok, (unsigned long long)hit_retry);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	CHECKF(torn == 0, "%llu torn reads", (unsigned long long)torn);
	CHECK(reads > 0);
	if (WTIO_TSAN) {
		t_skip("the lockless hit is not compiled under ThreadSanitizer "
		       "(WTIO_TSAN); only the locked path was checked");
	}
	CHECKF(hit_ok > 0, "no read served by the lockless hit");
	CHECKF(hit_retry > 0, "no lockless copy overlapped a writer: the race "
	       "was not exercised");
	printf("PASS: every read one whole version, under writers\n");
	return T_EXIT_PASS;
}
