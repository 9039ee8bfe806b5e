/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - small shared helpers for wtio's test programs.
 *
 * Each test is one program (liburing's habit): exit 0 pass, 1 fail,
 * 77 skip (with a printed reason). Files are created in the current
 * directory (meson runs tests in build/tests) and unlinked at exit.
 */
#ifndef WTIO_TEST_HELPERS_H
#define WTIO_TEST_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wtio.h"

#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__,	\
			#cond);						\
		exit(T_EXIT_FAIL);					\
	}								\
} while (0)

/* CHECK with a printf-style explanation. */
#define CHECKF(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__,	\
			#cond);						\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		exit(T_EXIT_FAIL);					\
	}								\
} while (0)

/* An int-returning call that must return 0. */
#define CHECK_OK(expr) do {						\
	long long __r = (long long)(expr);				\
	if (__r != 0) {							\
		fprintf(stderr, "FAIL %s:%d: %s returned %lld (%s)\n",	\
			__FILE__, __LINE__, #expr, __r,			\
			__r < 0 ? strerror((int)-__r) : "");		\
		exit(T_EXIT_FAIL);					\
	}								\
} while (0)

/* A call whose return must equal want. */
#define CHECK_EQ(expr, want) do {					\
	long long __r = (long long)(expr), __w = (long long)(want);	\
	if (__r != __w) {						\
		fprintf(stderr, "FAIL %s:%d: %s returned %lld, want %lld\n", \
			__FILE__, __LINE__, #expr, __r, __w);		\
		exit(T_EXIT_FAIL);					\
	}								\
} while (0)

static inline void t_skip(const char *fmt, ...)
{
	va_list ap;

	printf("SKIP: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(T_EXIT_SKIP);
}

/* Milliseconds of CLOCK_MONOTONIC, for tests that run for a while. */
static inline uint64_t t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- watchdog ---- */

static const char *t_watchdog_msg;

static void t_watchdog_fire(int sig)
{
	(void)sig;
	if (write(2, t_watchdog_msg, strlen(t_watchdog_msg)) < 0)
		_exit(T_EXIT_FAIL);
	_exit(T_EXIT_FAIL);
}

/*
 * Fail the test (exit T_EXIT_FAIL, msg on stderr) if it still runs after
 * seconds: a hang becomes a failure with a reason instead of a timeout.
 * msg must stay valid (a string literal) and should end in a newline.
 */
static inline void t_watchdog(unsigned int seconds, const char *msg)
{
	t_watchdog_msg = msg;
	signal(SIGALRM, t_watchdog_fire);
	alarm(seconds);
}

/* ---- temporary files ---- */

#define T_MAX_TMP 256
static char t_tmp_names[T_MAX_TMP][256];
static int t_nr_tmp;

static void t_cleanup_tmp(void)
{
	int i;

	for (i = 0; i < t_nr_tmp; i++)
		unlink(t_tmp_names[i]);
}

/*
 * A new, empty file name in the current directory ("<tag>.<pid>.<n>"),
 * created (so the name is taken) and unlinked at exit.
 */
static inline const char *t_tmpfile(const char *tag)
{
	char *p;
	int fd;

	if (t_nr_tmp == T_MAX_TMP) {
		fprintf(stderr, "too many temporary files\n");
		exit(T_EXIT_FAIL);
	}
	if (!t_nr_tmp)
		atexit(t_cleanup_tmp);
	p = t_tmp_names[t_nr_tmp];
	snprintf(p, 256, "wtio-%s.%d.%d", tag, (int)getpid(), t_nr_tmp);
	t_nr_tmp++;
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(p);
		exit(T_EXIT_FAIL);
	}
	close(fd);
	return p;
}

/*
 * Files in another directory (a mounted test image, say): a new, empty
 * "<dir>/<tag>.<n>", kept until t_remove_dir_files() unlinks them all
 * (before the directory goes away, so not at exit).
 */
#define T_MAX_DIR_FILES 64
static char t_dir_names[T_MAX_DIR_FILES][256];
static int t_nr_dir;

static inline const char *t_dir_file(const char *dir, const char *tag)
{
	char *p;
	int fd;

	CHECK(t_nr_dir < T_MAX_DIR_FILES);
	p = t_dir_names[t_nr_dir];
	snprintf(p, 256, "%s/%s.%d", dir, tag, t_nr_dir);
	fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECKF(fd >= 0, "create %s: %s", p, strerror(errno));
	close(fd);
	t_nr_dir++;
	return p;
}

static inline void t_remove_dir_files(void)
{
	while (t_nr_dir > 0)
		unlink(t_dir_names[--t_nr_dir]);
}

/* Write data[0..len) at offset 0 of the existing file path with a plain
 * descriptor and fsync it: known content on disk before a test starts. */
static inline void t_write_disk(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY);

	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, data, len, 0), (long long)len);
	CHECK_OK(fsync(fd));
	close(fd);
}

/* Skip the test when the current directory refuses O_DIRECT. */
static inline void t_require_odirect(void)
{
	const char *p = t_tmpfile("odirect-probe");
	int fd = open(p, O_RDWR | O_DIRECT);

	if (fd < 0 && errno == EINVAL)
		t_skip("O_DIRECT not supported in the current directory");
	if (fd < 0) {
		perror(p);
		exit(T_EXIT_FAIL);
	}
	close(fd);
}

/* ---- PRNG (splitmix64) ---- */

struct t_rng {
	uint64_t s;
};

static inline uint64_t t_rand(struct t_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); n > 0. */
static inline uint64_t t_rand_below(struct t_rng *r, uint64_t n)
{
	return t_rand(r) % n;
}

/* ---- patterns ---- */

/* The pattern byte for file offset off under seed: depends on both, so
 * misplaced data is caught. */
static inline uint8_t t_pattern_byte(uint64_t seed, uint64_t off)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + (off >> 3) * 0xbf58476d1ce4e5b9ull;

	z ^= z >> 29;
	return (uint8_t)(z >> ((off & 7) * 8)) | 1;	/* never zero */
}

static inline void t_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = t_pattern_byte(seed, off + i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static inline long long t_verify(const void *buf, size_t len, uint64_t seed,
				 uint64_t off)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != t_pattern_byte(seed, off + i))
			return (long long)i;
	return -1;
}

/* Index of the first byte of a that differs from b, or -1. */
static inline long long t_memdiff(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	if (!memcmp(a, b, len))
		return -1;
	for (i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long long)i;
	return -1;
}

static inline void *t_malloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(T_EXIT_FAIL);
	}
	return p;
}

static inline void *t_zalloc(size_t len)
{
	void *p = t_malloc(len);

	memset(p, 0, len ? len : 1);
	return p;
}

/* ---- threads ---- */

/* The state letter of thread tid of this process ('S': sleeping, 'R':
 * running...; '?' when it cannot be read): how a test sees that a thread
 * is blocked, without timing it. */
static inline char t_task_state(int tid)
{
	char p[64], line[512], *r;
	FILE *fp;

	snprintf(p, sizeof(p), "/proc/self/task/%d/stat", tid);
	fp = fopen(p, "r");
	if (!fp)
		return '?';
	r = fgets(line, sizeof(line), fp) ? strrchr(line, ')') : NULL;
	fclose(fp);
	return r && r[1] == ' ' ? r[2] : '?';
}

/* ---- writes mirrored in a shadow copy ---- */

/* Write the pattern (seed) to [off, off+len) of f, which must write it
 * all, and the same bytes to shadow; *size grows to cover the write. */
static inline void t_pwrite_shadow(struct wtio_file *f, uint8_t *shadow,
				   size_t *size, off_t off, size_t len,
				   uint64_t seed, unsigned int flags)
{
	uint8_t *buf = t_malloc(len);

	t_fill(buf, len, seed, (uint64_t)off);
	CHECK_EQ(wtio_pwrite(f, buf, len, off, flags), (long long)len);
	memcpy(shadow + off, buf, len);
	if ((size_t)off + len > *size)
		*size = (size_t)off + len;
	free(buf);
}

/* ---- what reached the disk ---- */

static inline off_t t_disk_size(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		perror(path);
		exit(T_EXIT_FAIL);
	}
	return st.st_size;
}

/*
 * Read the file's whole content with a separate O_DIRECT descriptor (so
 * nothing comes from the kernel's page cache that wtio bypasses). Returns
 * a malloc'd buffer of *lenp bytes (the file size).
 */
static inline uint8_t *t_read_disk(const char *path, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	off_t size;
	size_t alloc, done = 0;
	void *buf;
	uint8_t *out;

	if (fd < 0) {
		perror(path);
		exit(T_EXIT_FAIL);
	}
	size = lseek(fd, 0, SEEK_END);
	CHECK(size >= 0);
	alloc = ((size_t)size + 4095) & ~(size_t)4095;
	if (posix_memalign(&buf, 4096, alloc ? alloc : 4096)) {
		fprintf(stderr, "posix_memalign failed\n");
		exit(T_EXIT_FAIL);
	}
	while (done < alloc) {
		ssize_t n = pread(fd, (char *)buf + done, alloc - done,
				  (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("pread O_DIRECT");
			exit(T_EXIT_FAIL);
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	out = t_malloc((size_t)size);
	memcpy(out, buf, (size_t)size);
	free(buf);
	*lenp = (size_t)size;
	return out;
}

/* Check that the disk holds exactly shadow[0..len) and has size len. */
static inline void t_check_disk_equals(const char *path, const void *shadow,
				       size_t len)
{
	size_t dlen;
	uint8_t *d = t_read_disk(path, &dlen);
	long long at;

	CHECKF(dlen == len, "disk size %zu, want %zu", dlen, len);
	at = t_memdiff(d, shadow, len);
	CHECKF(at < 0, "disk differs from shadow at byte %lld (disk %02x want %02x)",
	       at, at < 0 ? 0 : d[at], at < 0 ? 0 : ((const uint8_t *)shadow)[at]);
	free(d);
}

/* Read [off, off+len) through wtio and compare with shadow + off. */
static inline void t_check_wtio_range(struct wtio_file *f, const uint8_t *shadow,
				      size_t shadow_len, off_t off, size_t len)
{
	uint8_t *buf = t_malloc(len);
	size_t want = 0;
	ssize_t n;
	long long at;

	if ((size_t)off < shadow_len)
		want = shadow_len - (size_t)off < len ? shadow_len - (size_t)off : len;
	n = wtio_pread(f, buf, len, off, 0);
	CHECKF(n == (ssize_t)want, "pread(%zu @ %lld) = %zd, want %zu", len,
	       (long long)off, n, want);
	at = t_memdiff(buf, shadow + off, want);
	CHECKF(at < 0, "pread data differs at file offset %lld",
	       (long long)off + at);
	free(buf);
}

/* ---- contexts ---- */

/* wtio_ctx_create(cfg), which must succeed. */
static inline struct wtio_ctx *t_ctx_create(const struct wtio_config *cfg)
{
	struct wtio_ctx *ctx = NULL;
	int ret = wtio_ctx_create(cfg, &ctx);

	CHECKF(ret == 0, "wtio_ctx_create: %s", strerror(-ret));
	return ctx;
}

/* wtio_ctx_create(cfg); a backend not available here (-EOPNOTSUPP) skips
 * the test, any other error fails it. */
static inline struct wtio_ctx *
t_ctx_create_or_skip(const struct wtio_config *cfg)
{
	struct wtio_ctx *ctx = NULL;
	int ret = wtio_ctx_create(cfg, &ctx);

	if (ret == -EOPNOTSUPP)
		t_skip("backend %u not available here", cfg->backend);
	CHECKF(ret == 0, "wtio_ctx_create: %s", strerror(-ret));
	return ctx;
}

/* wtio_ctx_create(cfg) for one backend of several a test runs over:
 * NULL, with the reason printed, when that backend cannot run here
 * (the test goes on with the others); any other error fails it. */
static inline struct wtio_ctx *t_ctx_create_backend(const struct wtio_config *cfg,
						   const char *name)
{
	struct wtio_ctx *ctx = NULL;
	int ret = wtio_ctx_create(cfg, &ctx);

	if (ret == -EOPNOTSUPP || ret == -ENOSYS || ret == -EPERM) {
		printf("SKIP: %s backend unavailable (%s)\n", name,
		       strerror(-ret));
		return NULL;
	}
	CHECKF(ret == 0, "wtio_ctx_create (%s): %s", name, strerror(-ret));
	return ctx;
}

/* A context with a given folio size and budget (in folios). */
static inline struct wtio_ctx *t_ctx(uint32_t folio_size, uint64_t nr_folios,
				     uint32_t backend)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = folio_size;
	cfg.cache_size = (uint64_t)folio_size * nr_folios;
	if (cfg.readahead_max > cfg.cache_size / 4)
		cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	if (cfg.readahead_max < folio_size)
		cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	cfg.backend = backend;
	return t_ctx_create_or_skip(&cfg);
}

/* The context's counters (wtio_stats, which must succeed). */
static inline struct wtio_stats t_stats(struct wtio_ctx *ctx)
{
	struct wtio_stats s;

	CHECK_OK(wtio_stats(ctx, &s));
	return s;
}

static inline struct wtio_file *t_open(struct wtio_ctx *ctx, const char *path,
				       int oflags)
{
	struct wtio_file *f = NULL;
	int ret = wtio_open(ctx, path, oflags, 0600, 0, &f);

	if (ret == -EOPNOTSUPP)
		t_skip("wtio_open(%s): O_DIRECT refused here", path);
	CHECKF(ret == 0, "wtio_open(%s): %s", path, strerror(-ret));
	return f;
}

#endif /* WTIO_TEST_HELPERS_H */
