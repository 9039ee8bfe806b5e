/* SPDX-License-Identifier: MIT */
/*
 * test_alloc_lock.c - a folio taken off the free list must be locked
 * before the CLOCK scan can take it (issue 16, defect 4).
 *
 * folio_alloc once stored refcount = 1 and only then state = LOCKED: a
 * scan in between took a reference (1 -> 2), trylocked the folio, found
 * no inode and unlocked it, clearing the lock the allocator went on to
 * rely on. The window is two stores wide, so this test links the library
 * built with test hooks (WTIO_TEST_HOOKS) and widens it from both sides:
 *  - every allocation dwells in its window (WTIO_TP_ALLOC_WINDOW), off
 *    the free list, before the folio is handed out;
 *  - a scan that holds the lock of a folio with no inode (what a stolen
 *    lock starts as) holds it longer (WTIO_TP_SCAN_LOCKED).
 * Readers in three threads miss all the time in a 16-folio cache, so
 * each allocation scans while others sit in their windows. The test
 * counts scans that looked at a folio inside another thread's window and
 * fails unless there were enough: the race it aims at did happen. With
 * the old order each such look steals the lock, which the library's lock
 * checks (an unlock of an unlocked folio, a free folio with an odd seq)
 * turn into an abort; data read is checked too.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "folio.h"
#include "test_hooks.h"

#define NR_FILES 3
#define FOLIOS_PER_FILE 48u
#define NTHREADS 3
#define RUN_NS (2000ull * 1000 * 1000)
#define MIN_WINDOW_LOOKS 20

static struct wtio_file *files[NR_FILES];
static struct wtio_folio *_Atomic window[NTHREADS + 8];
static _Atomic unsigned int next_slot;
static __thread int my_slot = -1;
static _Atomic uint64_t window_looks, scan_locked_free, allocs, reads;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Let others run for about us microseconds. */
static void dwell(unsigned int us)
{
	uint64_t end = now_ns() + us * 1000ull;

	while (now_ns() < end)
		sched_yield();
}

static int hook(enum wtio_test_point tp, struct wtio_folio *f)
{
	unsigned int i;

	switch (tp) {
	case WTIO_TP_ALLOC_WINDOW:
		if (my_slot < 0)
			my_slot = (int)atomic_fetch_add(&next_slot, 1) %
				  (NTHREADS + 8);
		atomic_fetch_add(&allocs, 1);
		atomic_store(&window[my_slot], f);
		dwell(20);
		atomic_store(&window[my_slot], NULL);
		break;
	case WTIO_TP_SCAN:
		for (i = 0; i < NTHREADS + 8; i++)
			if (i != (unsigned int)my_slot &&
			    atomic_load(&window[i]) == f)
				atomic_fetch_add(&window_looks, 1);
		break;
	case WTIO_TP_SCAN_LOCKED:
		if (!atomic_load(&f->inode)) {
			atomic_fetch_add(&scan_locked_free, 1);
			dwell(50);
		}
		break;
	default:
		break;
	}
	return 0;
}

static uint64_t word(unsigned int file, uint64_t folio)
{
	return ((uint64_t)file << 32) | folio;
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u + 1;
	uint64_t end = now_ns() + RUN_NS;
	uint64_t *buf = malloc(4096);

	CHECK(buf);
	while (now_ns() < end) {
		unsigned int fi = rand_r(&seed) % NR_FILES, k;
		uint64_t folio = rand_r(&seed) % FOLIOS_PER_FILE;

		CHECK_EQ(wtio_pread(files[fi], buf, 4096, (off_t)(folio * 4096),
				    0), 4096);
		for (k = 0; k < 4096 / 8; k++)
			CHECKF(buf[k] == word(fi, folio), "file %u folio %llu "
			       "word %u: %#llx", fi, (unsigned long long)folio,
			       k, (unsigned long long)buf[k]);
		atomic_fetch_add(&reads, 1);
	}
	free(buf);
	return NULL;
}

int main(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	pthread_t t[NTHREADS];
	uint64_t *buf = aligned_alloc(4096, 4096);
	unsigned int i, k;
	uint64_t j;

	t_watchdog(120, "test_alloc_lock: hung\n");
	CHECK(buf);
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = WTIO_MIN_FOLIOS * 4096ull;
	cfg.flags = WTIO_CONFIG_NO_READAHEAD;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	for (i = 0; i < NR_FILES; i++) {
		char path[64];

		snprintf(path, sizeof(path), "alloc_lock.%d.%u", (int)getpid(), i);
		CHECK_OK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0644,
				   0, &files[i]));
		unlink(path);
		for (j = 0; j < FOLIOS_PER_FILE; j++) {
			for (k = 0; k < 4096 / 8; k++)
				buf[k] = word(i, j);
			CHECK_EQ(wtio_pwrite(files[i], buf, 4096,
					     (off_t)(j * 4096), 0), 4096);
		}
		CHECK_OK(wtio_fsync(files[i]));
	}
	wtio_test_hook = hook;
	for (i = 0; i < NTHREADS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, reader,
					(void *)(uintptr_t)i));
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	wtio_test_hook = NULL;
	for (i = 0; i < NR_FILES; i++)
		CHECK_OK(wtio_close(files[i]));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
	printf("%llu reads, %llu allocations; scans looked %llu times at a "
	       "folio inside another thread's allocation window; %llu times "
	       "a scan held the lock of a folio without inode\n",
	       (unsigned long long)reads, (unsigned long long)allocs,
	       (unsigned long long)window_looks,
	       (unsigned long long)scan_locked_free);
	CHECKF(window_looks >= MIN_WINDOW_LOOKS, "only %llu looks into an "
	       "allocation window (want %d): the race was not exercised",
	       (unsigned long long)window_looks, MIN_WINDOW_LOOKS);
	printf("PASS: no folio lock stolen by a scan\n");
	return T_EXIT_PASS;
}
