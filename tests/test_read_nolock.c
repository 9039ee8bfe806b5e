/* SPDX-License-Identifier: MIT */
/*
 * test_read_nolock.c - the checker for reads served without the file
 * lock (buffered_read.c, read_cached_unlocked; docs/DESIGN.md, "Reads
 * without the file lock"). A reader that skips the lock relies on the
 * inode's i_wseq to see that no writer held the lock exclusive while it
 * copied; ThreadSanitizer cannot check a seqcount, so this test does:
 *
 * One writer keeps doing, with write-back writes (the file lock held
 * exclusive) and every 8-byte word carrying its version:
 *   truncate to one folio; one extending write of folios 1 and 2;
 *   one overwrite of folios 1 and 2 with the next version.
 * Under the lock the file is always either 1 folio long or 3 folios
 * long with folios 1 and 2 of one version. Readers read all 3 folios
 * (one buffer, or one iovec every two words for a slow copy): a read must return
 * 1 or 3 folios, never 2 (the size halfway through the extending write),
 * and folios 1 and 2 must hold one version, no older than the last write
 * that returned before the read began and no newer than the last begun
 * after it. Each folio's own seq cannot catch either tear: the writer
 * changes both folios one after the other, each whole under its lock.
 *
 * Like test_seqcount, it first shows that it can see what it looks for:
 *  1. with the i_wseq checks skipped (the hook at WTIO_TP_WSEQ_SKIP), it
 *     must see torn reads;
 *  2. as built, none in RUN_MS, with reads served without the lock and
 *     some of them thrown away because i_wseq moved (the race happened).
 * Under ThreadSanitizer that path is not compiled: the locked path is
 * checked the same way and the test exits 77.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "folio.h"
#include "test_hooks.h"

#define FS 4096u
#define WORDS (FS / 8)
#define NR 2
#define RUN_MS 2000ull
#define SABOTAGE_MS 5000ull

static struct wtio_file *file;
static _Atomic uint64_t started, done;
static _Atomic bool stop, sabotage;
static _Atomic uint64_t torn, reads, nolock_ok, nolock_retry, writes;

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	switch (tp) {
	case WTIO_TP_WSEQ_SKIP:
		return atomic_load_explicit(&sabotage, memory_order_relaxed);
	case WTIO_TP_WSEQ_RETRY:
		atomic_fetch_add_explicit(&nolock_retry, 1, memory_order_relaxed);
		break;
	case WTIO_TP_WSEQ_OK:
		atomic_fetch_add_explicit(&nolock_ok, 1, memory_order_relaxed);
		break;
	default:
		break;
	}
	return 0;
}

/* Folio 0 holds version 0 for ever; folios 1 and 2 the writer's. */
static uint64_t word(uint64_t ver, uint64_t folio)
{
	return (ver << 8) | folio;
}

static void write_version(uint64_t *buf, struct iovec *iov, uint64_t ver)
{
	unsigned int k;

	for (k = 0; k < 2 * WORDS; k++)
		buf[k] = word(ver, 1);
	atomic_store(&started, ver);
	/* One iovec a word: the copy takes long enough for readers to
	 * land between the two folios. */
	CHECK_EQ(wtio_pwritev(file, iov, 2 * WORDS, FS, 0), 2 * FS);
	atomic_store(&done, ver);
	atomic_fetch_add(&writes, 1);
}

/* A few microseconds between holds, so that reads without the lock
 * find i_wseq even as well as odd. */
static void pause_a_little(void)
{
	for (volatile unsigned int i = 0; i < 2000; i++)
		;
}

static void *writer(void *arg)
{
	uint64_t *buf = aligned_alloc(4096, 2 * FS);
	struct iovec iov[2 * WORDS];
	uint64_t ver = atomic_load(&done);
	unsigned int k;

	CHECK(buf);
	for (k = 0; k < 2 * WORDS; k++)
		iov[k] = (struct iovec){ buf + k, 8 };
	while (!atomic_load(&stop)) {
		CHECK_OK(wtio_ftruncate(file, FS));
		pause_a_little();
		write_version(buf, iov, ++ver);		/* extends */
		pause_a_little();
		write_version(buf, iov, ++ver);		/* overwrites */
		pause_a_little();
	}
	free(buf);
	return NULL;
}

/* One read checked; returns false (and counts) on a tear. */
static bool check_read(const uint64_t *p, ssize_t got, uint64_t floor,
		       uint64_t ceil)
{
	uint64_t ver;
	unsigned int k;

	CHECKF(got == FS || got == 2 * FS || got == 3 * FS,
	       "read of 3 folios returned %zd", got);
	for (k = 0; k < WORDS; k++)
		CHECKF(p[k] == word(0, 0), "folio 0 word %u is %#llx", k,
		       (unsigned long long)p[k]);
	if (got == FS)
		return true;
	if (got != 3 * FS) {
		atomic_fetch_add(&torn, 1);	/* the size mid-write */
		return false;
	}
	for (k = WORDS; k < 3 * WORDS; k++) {
		if (p[k] != p[WORDS]) {
			atomic_fetch_add(&torn, 1);
			return false;
		}
	}
	ver = p[WORDS] >> 8;
	CHECKF((p[WORDS] & 0xff) == 1, "folio 1 holds %#llx",
	       (unsigned long long)p[WORDS]);
	CHECKF(ver >= floor && ver <= ceil, "version %llu, want %llu..%llu",
	       (unsigned long long)ver, (unsigned long long)floor,
	       (unsigned long long)ceil);
	return true;
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u;
	uint64_t *buf = malloc(3 * FS);
	/* Two words an iovec: three folios' worth stays within IOV_MAX. */
	struct iovec iov[3 * WORDS / 2];
	unsigned int k;

	CHECK(buf);
	for (k = 0; k < 3 * WORDS / 2; k++)
		iov[k] = (struct iovec){ buf + 2 * k, 16 };
	while (!atomic_load(&stop)) {
		/* A read that sees the file 3 folios long sees a version
		 * whose write at least began, and not one overwritten by a
		 * write that had returned before the read (versions of an
		 * extension that a truncate cut are never read again). */
		uint64_t floor = atomic_load(&done), ceil;
		ssize_t got;

		memset(buf, 0, 3 * FS);
		if (rand_r(&seed) & 1)
			got = wtio_preadv(file, iov, 3 * WORDS / 2, 0, 0);
		else
			got = wtio_pread(file, buf, 3 * FS, 0, 0);
		ceil = atomic_load(&started);
		CHECKF(got >= 0, "read: %s", wtio_strerror((int)got));
		check_read(buf, got, floor, ceil);
		atomic_fetch_add(&reads, 1);
	}
	free(buf);
	return NULL;
}

/* Run the writer and the readers until ms passed (or, with until_torn,
 * a tear was seen). */
static void run(uint64_t ms, bool until_torn)
{
	pthread_t w, r[NR];
	uint64_t end = t_now_ms() + ms;
	unsigned int i;

	atomic_store(&stop, false);
	CHECK_OK(pthread_create(&w, NULL, writer, NULL));
	for (i = 0; i < NR; i++)
		CHECK_OK(pthread_create(&r[i], NULL, reader,
					(void *)(uintptr_t)(i + 1)));
	while (t_now_ms() < end && !(until_torn && atomic_load(&torn)))
		usleep(1000);
	atomic_store(&stop, true);
	pthread_join(w, NULL);
	for (i = 0; i < NR; i++)
		pthread_join(r[i], NULL);
}

int main(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	uint64_t *buf = aligned_alloc(4096, 3 * FS);
	char path[64];
	unsigned int k;

	t_watchdog(120, "test_read_nolock: hung\n");
	CHECK(buf);
	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = 64ull * FS;
	cfg.flags = WTIO_CONFIG_NO_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	snprintf(path, sizeof(path), "read_nolock.%d", (int)getpid());
	CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644, 0,
			   &file));
	unlink(path);
	for (k = 0; k < WORDS; k++)
		buf[k] = word(0, 0);
	for (k = WORDS; k < 3 * WORDS; k++)
		buf[k] = word(1, 1);
	atomic_store(&started, 1);
	atomic_store(&done, 1);
	CHECK_EQ(wtio_pwrite(file, buf, 3 * FS, 0, 0), 3 * FS);
	free(buf);
	wtio_test_hook = hook;

	if (!WTIO_TSAN) {
		/* 1: without the i_wseq checks, the checker must see tears. */
		atomic_store(&sabotage, true);
		run(SABOTAGE_MS, true);
		printf("i_wseq checks skipped: %llu reads, %llu torn, %llu "
		       "writes\n", (unsigned long long)reads,
		       (unsigned long long)torn, (unsigned long long)writes);
		CHECKF(torn > 0, "no torn read in %llu ms with the i_wseq "
		       "checks skipped: this test cannot see what it looks for",
		       (unsigned long long)SABOTAGE_MS);
		atomic_store(&sabotage, false);
		atomic_store(&torn, 0);
		atomic_store(&reads, 0);
		atomic_store(&writes, 0);
		atomic_store(&nolock_ok, 0);
		atomic_store(&nolock_retry, 0);
	}
	/* 2: as built. */
	run(WTIO_TSAN ? RUN_MS / 4 : RUN_MS, false);
	wtio_test_hook = NULL;
	printf("as built: %llu reads, %llu torn, %llu writes; served without "
	       "the lock %llu, thrown away when i_wseq moved %llu\n",
	       (unsigned long long)reads, (unsigned long long)torn,
	       (unsigned long long)writes, (unsigned long long)nolock_ok,
	       (unsigned long long)nolock_retry);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	CHECKF(torn == 0, "%llu torn reads", (unsigned long long)torn);
	CHECK(reads > 0 && writes > 0);
	if (WTIO_TSAN)
		t_skip("reads without the file lock are not compiled under "
		       "ThreadSanitizer (WTIO_TSAN); only the locked path was "
		       "checked");
	CHECKF(nolock_ok > 0, "no read served without the file lock");
	CHECKF(nolock_retry > 0, "no read without the lock overlapped a "
	       "writer: the race was not exercised");
	printf("PASS: every read one whole state of the file, under writers "
	       "that hold the lock exclusive\n");
	return T_EXIT_PASS;
}
