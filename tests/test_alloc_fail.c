/* SPDX-License-Identifier: MIT */
/*
 * test_alloc_fail - allocation-failure injection, every site in turn.
 *
 * This program links the static library with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,
 * --wrap=posix_memalign, so every allocation the library makes, from any
 * of its threads (callers, flushers, completion threads), goes through
 * the wrappers below; libwtio.so itself carries no test code. While a
 * window is "armed" each allocation is counted and the n-th one fails
 * (NULL, errno ENOMEM). For each scenario (a write in every mode, the
 * flusher's writeback, fsync, fdatasync, sync_range, truncate, close, the
 * queue, open and context creation) the sweep runs the scenario once to
 * count its allocations, then once more for each n = 1, 2, ... until an
 * armed window reaches fewer than n allocations.
 *
 * After each injected failure: a call either fails (-ENOMEM) or succeeds
 * with its data really there. Data is checked through the cache, against
 * the backing file (O_DIRECT) right after every durability call that
 * succeeded, and after the final close. Every write puts a pattern unique
 * to it (per offset), so each byte can be traced to the write that put it
 * there; a failed write or a reported write-back error makes the bytes it
 * touched "either the old or the new value", never anything else. A
 * crash is a failure, a hang is caught by alarm(), and a leak by the
 * ASan build's leak checker (every context is destroyed). The ATOMIC
 * scenario needs RWF_ATOMIC: on an XFS loop image (skipped part -> 77).
 *
 * Options: -s NAME (one scenario), -n N (one injection index), -v.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"
#include "xfs_loop.h"

/* ---- the wrappers ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t sz);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

#define MAX_SITES 512
static atomic_int armed;
static atomic_ulong nr_allocs;		/* counted in the armed window */
static unsigned long fail_at;		/* 0: count only */
static void *_Atomic injected_site;
static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;
static void *sites[MAX_SITES];		/* every site reached while armed */
static int nr_sites;
static void *failed_sites[MAX_SITES];	/* every site made to fail */
static int nr_failed_sites;

static void add_site(void **set, int *nr, void *site)
{
	int i;

	pthread_mutex_lock(&site_lock);
	for (i = 0; i < *nr; i++)
		if (set[i] == site)
			break;
	if (i == *nr && *nr < MAX_SITES)
		set[(*nr)++] = site;
	pthread_mutex_unlock(&site_lock);
}

static bool inject(void *site)
{
	unsigned long n;

	if (!atomic_load(&armed))
		return false;
	add_site(sites, &nr_sites, site);
	n = atomic_fetch_add(&nr_allocs, 1) + 1;
	if (n != fail_at)
		return false;
	atomic_store(&injected_site, site);
	add_site(failed_sites, &nr_failed_sites, site);
	return true;
}

void *__wrap_malloc(size_t n)
{
	if (inject(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t sz)
{
	if (inject(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_calloc(n, sz);
}

void *__wrap_realloc(void *p, size_t n)
{
	if (inject(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n)
{
	if (inject(__builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	return __real_aligned_alloc(align, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
	if (inject(__builtin_return_address(0)))
		return ENOMEM;
	return __real_posix_memalign(p, align, n);
}

/* "file+0xoff" for addr2line -e <file> 0xoff. */
static const char *site_name(void *site, char *buf, size_t len)
{
	Dl_info di;

	if (site && dladdr(site, &di) && di.dli_fname)
		snprintf(buf, len, "%s+0x%lx", di.dli_fname,
			 (unsigned long)((char *)site - (char *)di.dli_fbase));
	else
		snprintf(buf, len, "%p", site);
	return buf;
}

static void arm(unsigned long n)
{
	atomic_store(&injected_site, NULL);
	atomic_store(&nr_allocs, 0);
	fail_at = n;
	atomic_store(&armed, 1);
}

static void disarm(void)
{
	atomic_store(&armed, 0);
}

/* Arm again after a check, counting on from where the window was. */
static void resume(void)
{
	atomic_store(&armed, 1);
}

/* ---- the expected content: which write put each byte there ---- */

/*
 * A byte's candidates are a mask of write ids (bit 0: zero, a hole or
 * truncated range; bits 1..: writes of this iteration, in order). The
 * pattern of write id at offset o is never 0 and differs between ids.
 */
#define MAX_LEN (160 << 10)
#define ZERO_ID 0
#define MAX_ID 30

static uint8_t pat(int id, uint64_t o)
{
	if (id == ZERO_ID)
		return 0;
	return (uint8_t)((o + (uint64_t)id * 37 + (o >> 8) * 13) % 255 + 1);
}

struct expect {
	uint32_t mask[MAX_LEN];	/* acceptable ids now */
	uint32_t hist[MAX_LEN];	/* ids held since the last good fsync */
	uint64_t size;
	uint64_t size_alt;	/* another acceptable size, or size */
	int next_id;
};

static struct expect E;

static void exp_reset(void)
{
	uint64_t o;

	for (o = 0; o < MAX_LEN; o++)
		E.mask[o] = E.hist[o] = 1u << ZERO_ID;
	E.size = E.size_alt = 0;
	E.next_id = 1;
}

static bool byte_ok(uint64_t o, uint8_t v, uint32_t mask)
{
	int id;

	for (id = 0; id <= MAX_ID; id++)
		if ((mask & (1u << id)) && pat(id, o) == v)
			return true;
	return false;
}

/* ---- per-run state and failure reporting ---- */

struct scen;
static const struct scen *cur_sc;
static unsigned long cur_n;
static const char *cur_backend;
static bool verbose;
static int nr_failures;
static unsigned long nr_injected, nr_iterations;
static unsigned long nr_calls_failed, nr_calls_ok;
static bool iter_failed;
static bool want_fsync_error;	/* finish()'s fsync must report -ENOMEM */
static unsigned long nr_unreported;	/* WAIT_AFTER said 0, data unwritten */
static char calls[1024];	/* this iteration's calls and results */

static void note_call(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_call(const char *fmt, ...)
{
	size_t n = strlen(calls);
	va_list ap;

	if (n + 2 >= sizeof(calls))
		return;
	if (n)
		calls[n++] = ' ', calls[n] = 0;
	va_start(ap, fmt);
	vsnprintf(calls + n, sizeof(calls) - n, fmt, ap);
	va_end(ap);
}

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void report_where(FILE *f);

static void failf(const char *fmt, ...)
{
	va_list ap;

	if (iter_failed)
		return;	/* one report per iteration: the first says most */
	iter_failed = true;
	nr_failures++;
	fprintf(stderr, "FAIL ");
	report_where(stderr);
	fprintf(stderr, ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n  calls in the window: %s\n", calls);
}

/* ---- the library's handles for one iteration ---- */

struct scen {
	const char *name;
	void (*run)(const struct scen *sc);
	unsigned int wflags;	/* write scenarios: the write's flags */
	bool atomic_fs;		/* needs the XFS image */
	bool flusher;		/* short expiry: the flusher writes back */
	uint32_t folio_size;
};

static struct wtio_ctx *ctx;
static struct wtio_file *file;
static char path[256];
static const char *work_dir = ".";
static const char *xfs_dir;
static int cur_backend_id;
static bool tiny_cache;		/* WTIO_MIN_FOLIOS folios */
static uint8_t *buf, *rbuf;	/* MAX_LEN each, 4096-aligned */

static void report_where(FILE *f)
{
	char nm[512];

	fprintf(f, "[%s %s n=%lu", cur_sc ? cur_sc->name : "?", cur_backend,
		cur_n);
	if (atomic_load(&injected_site))
		fprintf(f, " failed site %s",
			site_name(atomic_load(&injected_site), nm, sizeof(nm)));
	fprintf(f, "; reproduce: test_alloc_fail -s %s -b %s -n %lu -v]",
		cur_sc ? cur_sc->name : "?", cur_backend, cur_n);
}

static void on_alarm(int sig)
{
	(void)sig;
	fprintf(stderr, "FAIL (hang: no progress in 20 s) ");
	report_where(stderr);
	fprintf(stderr, "\n");
	_exit(T_EXIT_FAIL);
}

static void mk_ctx(const struct scen *sc)
{
	struct wtio_config cfg;
	int ret;

	wtio_config_init(&cfg);
	cfg.folio_size = sc->folio_size ? sc->folio_size : 4096;
	cfg.cache_size = (uint64_t)cfg.folio_size * 256;
	if (cfg.cache_size < (4u << 20))
		cfg.cache_size = 4u << 20;
	if (tiny_cache) {
		cfg.cache_size = (uint64_t)cfg.folio_size * WTIO_MIN_FOLIOS;
		cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	}
	cfg.backend = (uint32_t)cur_backend_id;
	if (sc->flusher) {
		cfg.dirty_expire_ms = 1;
		cfg.writeback_interval_ms = 20;
	}
	ret = wtio_ctx_create(&cfg, &ctx);
	if (ret) {
		fprintf(stderr, "wtio_ctx_create (not armed): %s\n",
			strerror(-ret));
		exit(T_EXIT_FAIL);
	}
}

static void fill(int id, uint64_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pat(id, off + i);
}

/* A write through the library; expectations follow its result. */
static ssize_t do_write(uint64_t off, size_t len, unsigned int flags)
{
	int id = E.next_id++;
	uint64_t old_size = E.size, o;
	ssize_t r;

	CHECK(id <= MAX_ID && off + len <= MAX_LEN);
	fill(id, off, len);
	r = wtio_pwrite(file, buf, len, (off_t)off, flags);
	if (atomic_load(&armed))
		note_call("pwrite(%zu@%llu,0x%x)=%zd", len,
			  (unsigned long long)off, flags, r);
	if (r > (ssize_t)len || (r < 0 && r != -ENOMEM)) {
		failf("pwrite(%zu at %llu, flags 0x%x) returned %zd (%s), want "
		      "%zu or -ENOMEM", len, (unsigned long long)off, flags, r,
		      r < 0 ? strerror((int)-r) : "", len);
		r = -ENOMEM;
	}
	if (r == (ssize_t)len)
		nr_calls_ok++;
	else
		nr_calls_failed++;
	/* Done bytes are the new ones; the rest of the range may be either. */
	for (o = off; o < off + len; o++) {
		if (r > 0 && o < off + (uint64_t)r)
			E.mask[o] = 1u << id;
		else
			E.mask[o] |= 1u << id;
		E.hist[o] |= 1u << id;
	}
	if (r > 0 && off + (uint64_t)r > E.size) {
		E.size = off + (uint64_t)r;
		E.size_alt = E.size;
	}
	/* A failed write leaves the size where it was (the kernel's rule). */
	(void)old_size;
	return r;
}

/* The file's size and content through the cache, against E; then E takes
 * what the cache shows (so a later successful fsync must put exactly
 * that on disk). */
static void check_cache(const char *when)
{
	off_t sz = wtio_file_size(file);
	ssize_t r;
	uint64_t o;

	if (sz < 0) {
		failf("%s: wtio_file_size: %s", when, strerror((int)-sz));
		return;
	}
	if ((uint64_t)sz != E.size && (uint64_t)sz != E.size_alt) {
		failf("%s: size %lld through the cache, want %llu (a call that "
		      "failed moved the size, or one that succeeded did not)",
		      when, (long long)sz, (unsigned long long)E.size);
		return;
	}
	E.size = E.size_alt = (uint64_t)sz;
	if (!sz)
		return;
	r = wtio_pread(file, rbuf, (size_t)sz, 0, 0);
	if (r != sz) {
		failf("%s: pread of %lld bytes returned %zd", when,
		      (long long)sz, r);
		return;
	}
	for (o = 0; o < (uint64_t)sz; o++) {
		uint32_t keep = 0;
		int id;

		if (!byte_ok(o, rbuf[o], E.mask[o])) {
			failf("%s: byte %llu reads 0x%02x through the cache: "
			      "from no write that may have put it there (mask "
			      "0x%x)", when, (unsigned long long)o, rbuf[o],
			      E.mask[o]);
			return;
		}
		for (id = 0; id <= MAX_ID; id++)
			if ((E.mask[o] & (1u << id)) && pat(id, o) == rbuf[o])
				keep |= 1u << id;
		E.mask[o] = keep;
	}
}

static int read_disk(const char *p, uint64_t *dsize)
{
	int fd = open(p, O_RDONLY | O_DIRECT);
	off_t end;
	size_t done = 0, want;

	if (fd < 0)
		return -errno;
	end = lseek(fd, 0, SEEK_END);
	if (end < 0 || end > MAX_LEN) {
		close(fd);
		return end < 0 ? -errno : -EFBIG;
	}
	want = ((size_t)end + 4095) & ~(size_t)4095;
	memset(rbuf, 0, MAX_LEN);
	while (done < want) {
		ssize_t n = pread(fd, rbuf + done, want - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	*dsize = (uint64_t)end;
	return 0;
}

/* The backing file against E (O_DIRECT, its own descriptor): the range
 * [off, off + len), or with len 0 all of it and its size (after fsync or
 * close). */
static void check_disk(const char *when, uint64_t off, uint64_t len)
{
	bool exact_size = !len;
	uint64_t dsize = 0, o, n;
	int r = read_disk(path, &dsize);

	if (r) {
		failf("%s: reading the backing file: %s", when, strerror(-r));
		return;
	}
	if (exact_size && dsize != E.size && dsize != E.size_alt) {
		failf("%s: backing file size %llu, want %llu", when,
		      (unsigned long long)dsize, (unsigned long long)E.size);
		return;
	}
	n = exact_size ? E.size : off + len;
	if (!exact_size && dsize < n) {
		failf("%s: backing file is %llu bytes, the range written ends "
		      "at %llu", when, (unsigned long long)dsize,
		      (unsigned long long)n);
		return;
	}
	if (exact_size)
		off = 0;
	for (o = off; o < n; o++) {
		if (!byte_ok(o, rbuf[o], E.mask[o])) {
			failf("%s: byte %llu of the backing file is 0x%02x, from "
			      "no write that may have put it there (mask 0x%x): "
			      "a success with data lost", when,
			      (unsigned long long)o, rbuf[o], E.mask[o]);
			return;
		}
	}
}

/* Does the backing file hold [off, off + len) as expected? (No report.) */
static bool disk_matches(uint64_t off, uint64_t len)
{
	uint64_t dsize = 0, o;

	if (read_disk(path, &dsize) || dsize < off + len)
		return false;
	for (o = off; o < off + len; o++)
		if (!byte_ok(o, rbuf[o], E.mask[o]))
			return false;
	return true;
}

/* A durability call's error: what was written since the last good fsync
 * may be lost (reported), so any value it held since is acceptable. */
static void loosen(void)
{
	uint64_t o;

	for (o = 0; o < MAX_LEN; o++)
		E.mask[o] |= E.hist[o];
	E.size_alt = E.size;
}

static void synced(void)
{
	uint64_t o;

	for (o = 0; o < MAX_LEN; o++)
		E.hist[o] = E.mask[o];
}

/* The result of a durability call (fsync, fdatasync, close). */
static void durable(const char *what, int r, bool file_open)
{
	note_call("%s=%d", what, r);
	if (r == 0) {
		nr_calls_ok++;
		check_disk(what, 0, 0);
		if (file_open)
			synced();
		return;
	}
	nr_calls_failed++;
	if (r != -ENOMEM)
		failf("%s returned %d (%s), want 0 or -ENOMEM", what, r,
		      strerror(-r));
	loosen();
}

/* ---- setup and the common tail of every iteration ---- */

static void open_file(bool trunc)
{
	int ret = wtio_open(ctx, path, O_RDWR | O_CREAT | (trunc ? O_TRUNC : 0),
			    0600, 0, &file);

	if (ret) {
		fprintf(stderr, "wtio_open %s (not armed): %s\n", path,
			strerror(-ret));
		exit(T_EXIT_FAIL);
	}
}

/* A clean, durable 40000 bytes, then two dirty ranges (one extending),
 * so that every path meets clean, dirty, partial and past-EOF folios. */
static void prepare(void)
{
	open_file(true);
	exp_reset();
	CHECK_EQ(do_write(0, 40000, 0), 40000);
	CHECK_OK(wtio_fsync(file));
	synced();
	CHECK_EQ(do_write(10000, 4000, 0), 4000);
	CHECK_EQ(do_write(30000, 16000, 0), 16000);
}

/* Unarmed: the cache as expected, then fsync and close must keep it. */
static void finish(void)
{
	int r;

	if (file) {
		check_cache("after the window");
		r = wtio_fsync(file);
		if (want_fsync_error && r != -ENOMEM)
			failf("sync_range left the range unwritten with 0, and "
			      "fsync did not report it either (returned %d)", r);
		want_fsync_error = false;
		if (r == -ENOMEM) {
			/* An injected write-back failure reported now, for
			 * the first time: fine, once. */
			loosen();
			r = wtio_fsync(file);
			if (r)
				failf("second fsync after a reported error "
				      "returned %d", r);
		} else if (r) {
			failf("fsync after the window returned %d (%s)", r,
			      strerror(-r));
		}
		if (!r)
			check_disk("fsync after the window", 0, 0);
		/* The library still works: a new write sticks. */
		if (do_write(1000, 3000, 0) != 3000)
			failf("write after the window failed");
		r = wtio_close(file);
		file = NULL;
		if (r)
			failf("close after the window returned %d (%s)", r,
			      strerror(-r));
		else
			check_disk("close after the window", 0, 0);
	}
	if (ctx) {
		r = wtio_ctx_destroy(ctx);
		if (r)
			failf("wtio_ctx_destroy: %d", r);
		ctx = NULL;
	}
}

/* ---- scenarios: what runs in the armed window ---- */

static void sc_write(const struct scen *sc)
{
	ssize_t r;

	mk_ctx(sc);
	prepare();
	arm(cur_n);
	/* Across clean, dirty and partial folios; then an extending one. */
	r = do_write(5000, 3 * 4096 + 777, sc->wflags);
	if (r == 3 * 4096 + 777 && (sc->wflags & WTIO_DSYNC)) {
		disarm();
		check_disk("DSYNC write", 5000, 3 * 4096 + 777);
		resume();
	}
	r = do_write(44000, 9000, sc->wflags);
	disarm();
	if (r == 9000 && (sc->wflags & WTIO_DSYNC))
		check_disk("DSYNC extending write", 44000, 9000);
	finish();
}

/*
 * A write-through write over clean, durable data that fails: what the
 * cache then serves of its range is what the disk has. The writer was
 * told its write failed, so a byte of it that never reached the disk
 * must not be readable (an ioend that could not be allocated once left
 * the writer's new bytes cached and uptodate).
 */
static void sc_write_wt_clean(const struct scen *sc)
{
	const uint64_t off = 5000, len = 3 * 4096 + 777;
	uint64_t dsize = 0, o;
	ssize_t r;
	int id;

	mk_ctx(sc);
	prepare();
	durable("fsync before the window", wtio_fsync(file), true);
	check_cache("before the window");
	id = E.next_id;
	arm(cur_n);
	r = do_write(off, len, sc->wflags);
	disarm();
	if (r != (ssize_t)len && !read_disk(path, &dsize)) {
		memcpy(buf, rbuf, off + len);	/* the disk's bytes */
		if (wtio_pread(file, rbuf, len, (off_t)off, 0) !=
		    (ssize_t)len) {
			failf("pread after the failed write-through write");
		} else {
			for (o = off; o < off + len; o++) {
				if (rbuf[o - off] == buf[o] ||
				    rbuf[o - off] != pat(id, o))
					continue;
				failf("write-through write returned %zd; byte "
				      "%llu reads 0x%02x (its new value) through "
				      "the cache, the disk has 0x%02x", r,
				      (unsigned long long)o, rbuf[o - off],
				      buf[o]);
				break;
			}
		}
	}
	finish();
}

static void sc_atomic(const struct scen *sc)
{
	struct wtio_file_info fi;
	uint64_t o;
	ssize_t r;
	int i;

	mk_ctx(sc);
	prepare();
	CHECK_OK(wtio_file_info(file, &fi));
	arm(cur_n);
	r = do_write(8192, 4096, WTIO_ATOMIC);
	(void)r;
	r = do_write(45056, 4096, WTIO_ATOMIC);
	disarm();
	/* Untorn: each range all old or all new (through the cache). */
	for (i = 0; i < 2; i++) {
		uint64_t off = i ? 45056 : 8192;
		int id = E.next_id - 2 + i;
		ssize_t got = wtio_pread(file, rbuf, 4096, (off_t)off, 0);
		int nnew = 0;

		for (o = 0; got > 0 && o < (uint64_t)got; o++)
			nnew += rbuf[o] == pat(id, off + o);
		if (nnew && nnew != 4096)
			failf("atomic write at %llu torn: %d of 4096 bytes new "
			      "(read %zd)", (unsigned long long)off, nnew, got);
	}
	finish();
}

static void sc_fsync(const struct scen *sc)
{
	int r;

	mk_ctx(sc);
	prepare();
	check_cache("before the window");
	arm(cur_n);
	r = strcmp(sc->name, "fdatasync") ? wtio_fsync(file) :
		wtio_fdatasync(file);
	disarm();
	durable(sc->name, r, true);
	finish();
}

static void sc_sync_range(const struct scen *sc)
{
	int r;

	mk_ctx(sc);
	prepare();
	check_cache("before the window");
	arm(cur_n);
	r = wtio_sync_range(file, 0, 0, WTIO_SYNC_RANGE_WAIT_BEFORE |
			    WTIO_SYNC_RANGE_WRITE | WTIO_SYNC_RANGE_WAIT_AFTER);
	disarm();
	note_call("sync_range=%d", r);
	if (r == 0) {
		nr_calls_ok++;
		/* Written (not durable): the data is in the file now. */
		check_disk("sync_range", 0, E.size);
	} else {
		nr_calls_failed++;
		if (r != -ENOMEM)
			failf("sync_range returned %d, want 0 or -ENOMEM", r);
		loosen();
	}
	finish();
}

/* WRITE alone starts writeback (completed by the context's completion
 * thread), then WAIT_AFTER waits for it and must report what failed. */
static void sc_sync_range_async(const struct scen *sc)
{
	int r, r2;

	mk_ctx(sc);
	prepare();
	check_cache("before the window");
	arm(cur_n);
	r = wtio_sync_range(file, 0, 0, WTIO_SYNC_RANGE_WRITE);
	r2 = wtio_sync_range(file, 0, 0, WTIO_SYNC_RANGE_WAIT_AFTER);
	disarm();
	note_call("sync_range(WRITE)=%d sync_range(WAIT_AFTER)=%d", r, r2);
	if (r == 0 && r2 == 0) {
		nr_calls_ok++;
		/*
		 * Linux's WAIT_AFTER reports a writeback error of the range
		 * (file_fdatawait_range). wtio's started writeback leaves it
		 * to fsync (errseq), the data still dirty: counted, and the
		 * next fsync must report it and write the data.
		 */
		if (!disk_matches(0, E.size)) {
			nr_unreported++;
			if (verbose)
				printf("  NOTE: WAIT_AFTER returned 0 with the "
				       "range unwritten\n");
			want_fsync_error = true;
		}
	} else {
		nr_calls_failed++;
		if ((r && r != -ENOMEM) || (r2 && r2 != -ENOMEM))
			failf("sync_range returned %d, %d, want 0 or -ENOMEM",
			      r, r2);
		loosen();
	}
	finish();
}

static void sc_writeback(const struct scen *sc)
{
	struct wtio_stats st;
	int i;

	mk_ctx(sc);
	prepare();
	arm(cur_n);
	/* The flusher (expiry 1 ms, every 20 ms) writes it back; what an
	 * allocation failure left dirty (and marked failed) it leaves to
	 * fsync, so wait 25 periods at most. */
	for (i = 0; i < 50; i++) {
		CHECK_OK(wtio_stats(ctx, &st));
		if (!st.dirty_folios && !st.writeback_folios)
			break;
		usleep(10000);
	}
	disarm();
	if (verbose)
		printf("  flusher: %d polls, dirty %llu, writeback %llu\n", i,
		       (unsigned long long)st.dirty_folios,
		       (unsigned long long)st.writeback_folios);
	/* A failure the flusher hit must be retried, or reported by the
	 * next fsync (finish() accepts -ENOMEM once). */
	finish();
}

static void sc_truncate(const struct scen *sc)
{
	uint64_t o;
	int r;

	mk_ctx(sc);
	prepare();
	check_cache("before the window");
	arm(cur_n);
	r = wtio_ftruncate(file, 7000);
	note_call("ftruncate(7000)=%d", r);
	if (r == 0) {
		nr_calls_ok++;
		for (o = 7000; o < MAX_LEN; o++)
			E.mask[o] = E.hist[o] = 1u << ZERO_ID;
		E.size = E.size_alt = 7000;
	} else {
		nr_calls_failed++;
		if (r != -ENOMEM)
			failf("ftruncate(7000) returned %d, want 0 or -ENOMEM", r);
		/* Shrinking failed: data past 7000 may be gone or not. */
		for (o = 7000; o < MAX_LEN; o++)
			E.mask[o] |= 1u << ZERO_ID;
		E.size_alt = 7000;
	}
	disarm();
	check_cache("after the shrink");
	resume();
	r = wtio_ftruncate(file, 50000);
	disarm();
	note_call("ftruncate(50000)=%d", r);
	if (r == 0) {
		nr_calls_ok++;
		for (o = E.size; o < 50000; o++)
			E.mask[o] = 1u << ZERO_ID;
		E.size = E.size_alt = 50000;
	} else {
		nr_calls_failed++;
		E.size_alt = 50000;
	}
	finish();
}

static void sc_close(const struct scen *sc)
{
	int r;

	mk_ctx(sc);
	prepare();
	check_cache("before the window");
	arm(cur_n);
	r = wtio_close(file);
	disarm();
	file = NULL;
	durable("close", r, false);
	finish();
}

static void sc_queue(const struct scen *sc)
{
	static const unsigned int fl[] = {
		WTIO_WRITETHROUGH, WTIO_WRITETHROUGH | WTIO_DSYNC, 0,
		WTIO_WRITETHROUGH | WTIO_NOSERIAL,
	};
	static const uint64_t offs[] = { 3000, 20000, 41000, 50000 };
	static const size_t lens[] = { 5000, 8192, 6000, 4096 };
	struct wtio_queue *q = NULL;
	struct wtio_cqe cqe[8];
	uint8_t *wb[4];
	int ids[4], i, r, got = 0, inflight = 0;
	uint64_t o;

	mk_ctx(sc);
	prepare();
	check_cache("before the window");
	for (i = 0; i < 4; i++) {
		wb[i] = __real_malloc(lens[i]);
		CHECK(wb[i]);
	}
	arm(cur_n);
	r = wtio_queue_create(ctx, 8, &q);
	if (r) {
		disarm();
		if (r != -ENOMEM)
			failf("wtio_queue_create returned %d", r);
		nr_calls_failed++;
		goto out;
	}
	for (i = 0; i < 4; i++) {
		size_t k;

		ids[i] = E.next_id++;
		for (k = 0; k < lens[i]; k++)
			wb[i][k] = pat(ids[i], offs[i] + k);
		r = wtio_queue_pwrite(q, file, wb[i], lens[i], (off_t)offs[i],
				      fl[i], (uint64_t)i);
		note_call("queue_pwrite(%zu@%llu,0x%x)=%d", lens[i],
			  (unsigned long long)offs[i], fl[i], r);
		for (o = offs[i]; o < offs[i] + lens[i]; o++) {
			E.mask[o] |= 1u << ids[i];
			E.hist[o] |= 1u << ids[i];
		}
		if (r) {
			nr_calls_failed++;
			if (r != -ENOMEM)
				failf("queue_pwrite %d returned %d", i, r);
			ids[i] = -1;
		} else {
			inflight++;
		}
	}
	while (got < inflight) {
		r = wtio_queue_reap(q, cqe, 8, 1, -1);
		if (r < 0) {
			failf("queue_reap returned %d", r);
			break;
		}
		for (i = 0; i < r; i++) {
			int k = (int)cqe[i].user_data;

			note_call("cqe(%d)=%lld", k, (long long)cqe[i].res);

			if (k < 0 || k > 3 || ids[k] < 0) {
				failf("completion for %d unknown", k);
				continue;
			}
			if (cqe[i].res == (int64_t)lens[k]) {
				nr_calls_ok++;
				for (o = offs[k]; o < offs[k] + lens[k]; o++)
					E.mask[o] = 1u << ids[k];
				if (offs[k] + lens[k] > E.size)
					E.size = E.size_alt = offs[k] + lens[k];
			} else {
				nr_calls_failed++;
				if (cqe[i].res != -ENOMEM)
					failf("queued write %d completed with %lld",
					      k, (long long)cqe[i].res);
				if (cqe[i].res > 0)
					failf("short queued write %d: %lld", k,
					      (long long)cqe[i].res);
			}
			/* The DSYNC one must be in the file when it completes. */
		}
		got += r;
	}
	r = wtio_queue_destroy(q);
	disarm();
	if (r)
		failf("wtio_queue_destroy returned %d", r);
	/* The queued writes overlap nothing but may leave holes: E.size
	 * from the completions; bytes past the old size and before a write
	 * that extended are zero. */
	for (o = 46000; o < E.size; o++)
		E.mask[o] |= 1u << ZERO_ID;
out:
	for (i = 0; i < 4; i++)
		free(wb[i]);
	finish();
}

/* The largest offset lseek accepts on fd (the filesystem's s_maxbytes),
 * capped at 2^62 as the library caps it (file.c, WTIO_MAX_FILE_SIZE). */
static int64_t max_offset(int fd)
{
	int64_t lo = 0, hi = (int64_t)1 << 62;

	if (lseek(fd, hi, SEEK_SET) == hi)
		return hi;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;

		if (lseek(fd, mid, SEEK_SET) == mid)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* A vectored write of 12 segments that runs past the filesystem's size
 * limit is cut to the segments below it (a copy of the iovec array when
 * more than 8 remain). */
static void sc_writev_limit(const struct scen *sc)
{
	struct iovec iov[12];
	int64_t max, off;
	ssize_t r;
	int fd, i;

	mk_ctx(sc);
	open_file(true);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	max = max_offset(fd);
	close(fd);
	off = max - 950;	/* 10 segments of 100 bytes fit */
	for (i = 0; i < 12; i++) {
		iov[i].iov_base = buf + i * 100;
		iov[i].iov_len = 100;
	}
	fill(1, (uint64_t)off, 1200);
	arm(cur_n);
	r = wtio_pwritev(file, iov, 12, (off_t)off, 0);
	disarm();
	note_call("pwritev(12x100@%lld)=%zd", (long long)off, r);
	if (r == 950) {
		nr_calls_ok++;
		if (wtio_pread(file, rbuf, 950, (off_t)off, 0) != 950 ||
		    memcmp(rbuf, buf, 950))
			failf("the cut vectored write does not read back");
	} else {
		nr_calls_failed++;
		if (r != -ENOMEM)
			failf("pwritev past the size limit returned %zd, want "
			      "950 or -ENOMEM", r);
		if (wtio_file_size(file) != 0)
			failf("a failed pwritev moved the size to %lld",
			      (long long)wtio_file_size(file));
	}
	CHECK_OK(wtio_ftruncate(file, 0));
	if (wtio_close(file))
		failf("close after the cut write failed");
	file = NULL;
	finish();
}

static void sc_open(const struct scen *sc)
{
	struct wtio_file *f2 = NULL;
	int r;

	mk_ctx(sc);
	arm(cur_n);
	r = wtio_open(ctx, path, O_RDWR | O_CREAT, 0600, 0, &f2);
	if (r == 0) {
		r = wtio_pwrite(f2, "x", 1, 0, 0) == 1 ? 0 : -ENOMEM;
		if (wtio_close(f2) && !r)
			r = -ENOMEM;
	}
	disarm();
	if (r && r != -ENOMEM)
		failf("open/write/close returned %d", r);
	finish();
}

static void sc_ctx(const struct scen *sc)
{
	struct wtio_config cfg;
	struct wtio_ctx *c = NULL;
	int r;

	(void)sc;
	wtio_config_init(&cfg);
	cfg.cache_size = 1u << 20;
	cfg.backend = (uint32_t)cur_backend_id;
	arm(cur_n);
	r = wtio_ctx_create(&cfg, &c);
	if (r == 0)
		r = wtio_ctx_destroy(c);
	disarm();
	if (r && r != -ENOMEM)
		failf("ctx_create/destroy returned %d", r);
}

static const struct scen scens[] = {
	{ .name = "write_wb", .run = sc_write, .wflags = 0 },
	{ .name = "write_wb_64k", .run = sc_write, .wflags = 0,
	  .folio_size = 65536 },
	{ .name = "write_wt", .run = sc_write, .wflags = WTIO_WRITETHROUGH },
	{ .name = "write_wt_64k", .run = sc_write, .wflags = WTIO_WRITETHROUGH,
	  .folio_size = 65536 },
	{ .name = "write_wt_clean", .run = sc_write_wt_clean,
	  .wflags = WTIO_WRITETHROUGH },
	{ .name = "write_noserial", .run = sc_write, .wflags = WTIO_WRITETHROUGH | WTIO_NOSERIAL },
	{ .name = "write_dontcache", .run = sc_write, .wflags = WTIO_DONTCACHE },
	{ .name = "write_wt_dontcache", .run = sc_write, .wflags = WTIO_WRITETHROUGH | WTIO_DONTCACHE },
	{ .name = "write_dsync", .run = sc_write, .wflags = WTIO_DSYNC },
	{ .name = "write_wt_dsync", .run = sc_write, .wflags = WTIO_WRITETHROUGH | WTIO_DSYNC },
	{ .name = "write_atomic", .run = sc_atomic, .wflags = WTIO_ATOMIC, .atomic_fs = true },
	{ .name = "writeback", .run = sc_writeback, .wflags = 0, .flusher = true },
	{ .name = "fsync", .run = sc_fsync },
	{ .name = "fdatasync", .run = sc_fsync },
	{ .name = "sync_range", .run = sc_sync_range },
	{ .name = "sync_range_async", .run = sc_sync_range_async },
	{ .name = "truncate", .run = sc_truncate },
	{ .name = "close", .run = sc_close },
	{ .name = "queue", .run = sc_queue },
	{ .name = "writev_limit", .run = sc_writev_limit },
	{ .name = "open", .run = sc_open },
	{ .name = "ctx_create", .run = sc_ctx },
};
#define NR_SCENS (sizeof(scens) / sizeof(scens[0]))

static void run_one(const struct scen *sc, unsigned long n)
{
	cur_sc = sc;
	cur_n = n;
	iter_failed = false;
	want_fsync_error = false;
	calls[0] = 0;
	/* On the XFS image when there is one: its fsync (a loop device
	 * over /dev/shm) is what keeps ~200 iterations within a minute. */
	snprintf(path, sizeof(path), "%s/wtio-allocfail.%d",
		 xfs_dir ? xfs_dir : work_dir, (int)getpid());
	alarm(20);
	sc->run(sc);
	alarm(0);
	nr_iterations++;
	if (n && atomic_load(&injected_site))
		nr_injected++;
	if (verbose) {
		char nm[512];

		printf("  %s %s n=%lu: %lu allocations%s%s%s\n", sc->name,
		       cur_backend, n, atomic_load(&nr_allocs),
		       atomic_load(&injected_site) ? ", failed " : "",
		       atomic_load(&injected_site) ?
		       site_name(atomic_load(&injected_site), nm, sizeof(nm)) : "",
		       iter_failed ? " FAIL" : "");
	}
	unlink(path);
}

/* Count, then fail each allocation in turn. */
static void sweep(const struct scen *sc, unsigned long only_n)
{
	unsigned long n, counted, max_n;
	unsigned long inj0 = nr_injected;
	int fail0 = nr_failures;

	if (only_n) {
		run_one(sc, only_n);
		return;
	}
	run_one(sc, 0);
	counted = atomic_load(&nr_allocs);
	/* Threads make the count vary a little: go on while the n-th
	 * allocation is still reached, up to twice the count (+ 8). */
	max_n = 2 * counted + 8;
	for (n = 1; n <= max_n; n++) {
		run_one(sc, n);
		if (!atomic_load(&injected_site) && atomic_load(&nr_allocs) < n)
			break;
	}
	printf("%-20s %-13s %3lu allocations counted, %3lu failures injected%s\n",
	       sc->name, cur_backend, counted, nr_injected - inj0,
	       nr_failures > fail0 ? ", FAILED" : "");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *only = NULL, *only_b = NULL;
	unsigned long only_n = 0;
	bool atomic_skipped = false;
	char why[300] = "";
	struct timespec t0, t1;
	bool io_uring_ok = true;
	int c, b;
	size_t i;

	while ((c = getopt(argc, argv, "s:n:b:v")) != -1) {
		switch (c) {
		case 's': only = optarg; break;
		case 'n': only_n = strtoul(optarg, NULL, 0); break;
		case 'b': only_b = optarg; break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: %s [-s scenario] "
				"[-b io_uring|psync|io_uring-tiny] "
				"[-n N] [-v]\n", argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	CHECK(__real_posix_memalign((void **)&buf, 4096, MAX_LEN) == 0);
	CHECK(__real_posix_memalign((void **)&rbuf, 4096, MAX_LEN) == 0);
	t_require_odirect();
	clock_gettime(CLOCK_MONOTONIC, &t0);

	/* RWF_ATOMIC: an XFS image (the build dir's ext4 has none here). */
	{
		int ret = xl_setup("allocfail", "");

		if (ret == XL_OK) {
			xfs_dir = xl.mnt;
		} else {
			atomic_skipped = true;
			snprintf(why, sizeof(why), "%s", xl.why);
		}
	}

	/* io_uring, psync, then io_uring with the smallest cache (16
	 * folios): writers throttled, the flusher and eviction running
	 * while the window's calls are. */
	for (b = 0; b < 3; b++) {
		static const char *const names[] = {
			"io_uring", "psync", "io_uring-tiny",
		};

		cur_backend = names[b];
		cur_backend_id = b == 1 ? WTIO_BACKEND_PSYNC :
			WTIO_BACKEND_IO_URING;
		tiny_cache = b == 2;
		if (only_b && strcmp(only_b, cur_backend))
			continue;
		if (b == 2 && !io_uring_ok)
			continue;
		if (!b) {
			struct wtio_config cfg;
			struct wtio_ctx *probe;

			wtio_config_init(&cfg);
			cfg.cache_size = 1u << 20;
			cfg.backend = WTIO_BACKEND_IO_URING;
			if (wtio_ctx_create(&cfg, &probe)) {
				printf("skipped part io_uring: no io_uring here\n");
				io_uring_ok = false;
				atomic_skipped = true;
				snprintf(why, sizeof(why), "io_uring unavailable");
				continue;
			}
			wtio_ctx_destroy(probe);
		}
		for (i = 0; i < NR_SCENS; i++) {
			if (only && strcmp(only, scens[i].name))
				continue;
			if (scens[i].atomic_fs && !xfs_dir)
				continue;
			if (scens[i].atomic_fs) {
				/* Does the image give RWF_ATOMIC at all? */
				struct wtio_file_info fi;

				cur_sc = &scens[i];
				mk_ctx(&scens[i]);
				snprintf(path, sizeof(path), "%s/probe", xfs_dir);
				open_file(true);
				CHECK_OK(wtio_file_info(file, &fi));
				wtio_close(file);
				file = NULL;
				wtio_ctx_destroy(ctx);
				ctx = NULL;
				unlink(path);
				if (fi.atomic_unit_min > 4096 ||
				    fi.atomic_unit_max < 4096) {
					atomic_skipped = true;
					snprintf(why, sizeof(why), "no 4 KiB "
						 "RWF_ATOMIC on the XFS image");
					continue;
				}
			}
			sweep(&scens[i], only_n);
		}
	}
	if (xfs_dir)
		xl_cleanup();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("alloc_fail: %lu iterations, %lu injected allocation failures at "
	       "%d distinct sites (of %d sites reached), %lu library calls "
	       "failed, %lu succeeded, %d failures, %.1f s\n", nr_iterations,
	       nr_injected, nr_failed_sites, nr_sites, nr_calls_failed,
	       nr_calls_ok, nr_failures,
	       (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (nr_unreported)
		printf("alloc_fail: %lu times sync_range(WRITE) then WAIT_AFTER "
		       "returned 0 with the range unwritten after a failed "
		       "allocation (the next fsync reported -ENOMEM and wrote "
		       "it; Linux reports it at WAIT_AFTER)\n", nr_unreported);
	if (verbose) {
		char nm[512];
		int k;

		for (k = 0; k < nr_sites; k++)
			printf("  site %s\n", site_name(sites[k], nm, sizeof(nm)));
	}
	if (nr_failures)
		return T_EXIT_FAIL;
	if (atomic_skipped && !only) {
		printf("SKIP: part not run: %s (everything else passed)\n", why);
		return T_EXIT_SKIP;
	}
	return T_EXIT_PASS;
}
