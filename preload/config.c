/* SPDX-License-Identifier: MIT */
/*
 * config.c - the WTIO_* environment settings and the one wtio context.
 *
 *   WTIO_MODE        writeback (default) | writethrough |
 *                    writethrough-noserial | dontcache
 *   WTIO_DSYNC       1: every write is WTIO_DSYNC (data integrity on return)
 *   WTIO_PATHS       colon-separated directories served (default: the
 *                    current directory when the program starts)
 *   WTIO_CACHE_SIZE  cache budget, bytes with optional K/M/G/T suffix
 *                    (default 128M; 64K to the machine's memory)
 *   WTIO_FOLIO_SIZE  the cache's folio size, a power of two from 4K
 *                    (default) to 1M; the budget must hold 16 of them
 *   WTIO_LARGE_FOLIOS 0: every file in folios of WTIO_FOLIO_SIZE
 *                    (default 1 here: each file its size)
 *   WTIO_IO_CHANNEL  aio | io_uring: the kind of every channel
 *
 * A bad value is said on stderr (debug or not) and the process serves
 * nothing: never a silent change of mode, budget or paths.
 *   WTIO_DISABLE     1: serve nothing (everything passes through)
 *   WTIO_HOLDER      set by wtio-run --shared: the cache holder's socket
 *                    ("@name"); the process then has no cache of its own,
 *                    every served file is the holder's (remote_ops.c)
 *   WTIO_DEBUG       1: one line on stderr per decision
 *   WTIO_STATS       FILE: a line of the context's I/O counters appended
 *                    to FILE at exit; "1" or "stderr": written to the
 *                    stderr the process started with; "0": none
 * The switches (DSYNC, DISABLE, DEBUG, LARGE_FOLIOS) take 0 or 1 and
 * nothing else, IO_CHANNEL its two names (shim_env.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "shim_env.h"
#include "shim_size.h"

struct shim_config shim_cfg;

/* The readahead window of a sequential reader at most. */
#define SHIM_READAHEAD (2u << 20)

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wtio_ctx *ctx;
static bool ctx_failed;

/* "fd N: ..." becomes "fd N (PATH): ...": a line about a descriptor names
 * its file. Returns the bytes written into out. */
static int name_fd(const char *msg, char *out, size_t len)
{
	char pp[48], path[PATH_MAX];
	const char *colon;
	char *end;
	long fd;
	ssize_t n;

	if (strncmp(msg, "fd ", 3))
		return -1;
	fd = strtol(msg + 3, &end, 10);
	colon = end;
	if (end == msg + 3 || *colon != ':' || fd < 0)
		return -1;
	snprintf(pp, sizeof(pp), "/proc/self/fd/%ld", fd);
	n = readlink(pp, path, sizeof(path) - 1);
	if (n <= 0)
		return -1;
	path[n] = 0;
	if (strstr(colon, path))	/* named already */
		return -1;
	return snprintf(out, len, "fd %ld (%s)%s", fd, path, colon);
}

static void shim_say(bool always, const char *fmt, va_list ap)
{
	char buf[PATH_MAX + 512], msg[512];
	int n, m;

	if (!always && !shim_cfg.debug)
		return;
	n = snprintf(buf, sizeof(buf), "wtio-preload[%d]: ", (int)getpid());
	vsnprintf(msg, sizeof(msg), fmt, ap);
	m = name_fd(msg, buf + n, sizeof(buf) - (size_t)n - 1);
	if (m < 0)
		m = snprintf(buf + n, sizeof(buf) - (size_t)n - 1, "%s", msg);
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (real.write)
		real.write(2, buf, (size_t)n);
}

void shim_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_say(false, fmt, ap);
	va_end(ap);
}

/* A bad setting: said whether or not debugging is on. */
static void shim_complain(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void shim_complain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_say(true, fmt, ap);
	va_end(ap);
}

static bool add_path(const char *p)
{
	char resolved[PATH_MAX];
	struct stat st;
	size_t len;

	if (!*p || !realpath(p, resolved) || stat(resolved, &st) ||
	    !S_ISDIR(st.st_mode))
		return false;
	len = strlen(resolved);
	while (len > 1 && resolved[len - 1] == '/')
		resolved[--len] = 0;
	shim_cfg.paths = realloc(shim_cfg.paths,
				 (size_t)(shim_cfg.nr_paths + 1) * sizeof(char *));
	shim_cfg.path_lens = realloc(shim_cfg.path_lens,
				     (size_t)(shim_cfg.nr_paths + 1) * sizeof(size_t));
	shim_cfg.paths[shim_cfg.nr_paths] = strdup(resolved);
	shim_cfg.path_lens[shim_cfg.nr_paths] = len;
	shim_cfg.nr_paths++;
	return true;
}

/* WTIO_STATS's destination when it is stderr: a dup of the descriptor
 * the process started with, taken now (cp and dd close their stderr
 * before exit handlers run), and its identity, so that the line never
 * lands in a file the program later got at that number. */
static int stats_fd = -1;
static struct stat stats_st;

/*
 * WTIO_STATS: "1" or "stderr" (a file of that name: "./1") is stderr,
 * "0" or empty is none, any other value a file. A user setting it to 1,
 * as the other switches, got a file named "1" in whatever directory the
 * program was in at exit.
 */
static void stats_init(const char *v)
{
	shim_cfg.stats = NULL;
	if (!v || !*v || !strcmp(v, "0"))
		return;
	if (strcmp(v, "1") && strcmp(v, "stderr")) {
		shim_cfg.stats = v;
		return;
	}
	stats_fd = real.fcntl ? shim_dupfd_own(2) : -1;
	if (stats_fd >= 0 && real.fstat(stats_fd, &stats_st) < 0) {
		real.close(stats_fd);
		stats_fd = -1;
	}
	if (stats_fd >= 0)
		shim_cfg.stats = v;
}

static void init(void)
{
	const char *mode = getenv("WTIO_MODE");
	const char *v;

	shim_resolve();
	shim_cfg.debug = (v = getenv("WTIO_DEBUG")) && *v == '1';
	stats_init(getenv("WTIO_STATS"));
	shim_cfg.disabled = (v = getenv("WTIO_DISABLE")) && *v == '1';
	if (!mode || !*mode || !strcmp(mode, "writeback"))
		shim_cfg.default_flags = 0;
	else if (!strcmp(mode, "writethrough"))
		shim_cfg.default_flags = WTIO_WRITETHROUGH;
	else if (!strcmp(mode, "writethrough-noserial"))
		shim_cfg.default_flags = WTIO_WRITETHROUGH | WTIO_NOSERIAL;
	else if (!strcmp(mode, "dontcache"))
		shim_cfg.default_flags = WTIO_DONTCACHE;
	else if (!strcmp(mode, "adaptive"))
		shim_cfg.default_flags = WTIO_ADAPTIVE;
	else {
		shim_cfg.disabled = true;
		shim_complain("unknown WTIO_MODE '%s': serving nothing", mode);
	}
	if ((v = getenv("WTIO_DSYNC")) && *v == '1')
		shim_cfg.default_flags |= WTIO_DSYNC;
	{
		const char *want, *bad = shim_env_bad_switch(&want);

		if (bad) {
			shim_cfg.disabled = true;
			shim_complain("%s=%s: takes %s: serving nothing", bad,
				      getenv(bad), want);
		}
	}
	shim_cfg.cache_size = 128ull << 20;
	if ((v = getenv("WTIO_CACHE_SIZE")) && *v) {
		const char *why;

		/* never a budget other than the one asked for */
		if (shim_parse_size(v, &shim_cfg.cache_size, &why)) {
			shim_cfg.disabled = true;
			shim_complain("WTIO_CACHE_SIZE=%s: %s: serving nothing",
				      v, why);
		}
	}
	shim_cfg.folio_size = 4096;
	if ((v = getenv("WTIO_FOLIO_SIZE")) && *v) {
		const char *why;

		if (shim_parse_folio_size(v, &shim_cfg.folio_size, &why)) {
			shim_cfg.disabled = true;
			shim_complain("WTIO_FOLIO_SIZE=%s: %s: serving nothing",
				      v, why);
		}
	}
	{
		const char *why;

		if (!shim_cfg.disabled &&
		    shim_check_budget(shim_cfg.cache_size, shim_cfg.folio_size,
				      &why)) {
			shim_cfg.disabled = true;
			shim_complain("WTIO_CACHE_SIZE and WTIO_FOLIO_SIZE: %s: serving nothing",
				      why);
		}
	}
	v = getenv("WTIO_PATHS");
	if (v && *v) {
		char *copy = strdup(v), *save = NULL, *tok;

		for (tok = strtok_r(copy, ":", &save); tok;
		     tok = strtok_r(NULL, ":", &save))
			if (!add_path(tok)) {
				shim_cfg.disabled = true;
				shim_complain("WTIO_PATHS: %s is not a directory: serving nothing",
					      tok);
			}
		free(copy);
	} else {
		add_path(".");
	}
	if (!shim_cfg.nr_paths)
		shim_cfg.disabled = true;
	v = getenv(HOLDER_ENV);
	if (v && *v && !shim_cfg.disabled) {
		if (remote_config(v)) {
			remote_setup();
		} else {
			shim_cfg.disabled = true;
			shim_complain("%s=%s: not a holder address: serving nothing",
				      HOLDER_ENV, v);
		}
	}
	shim_debug("mode flags %#x, %d paths, cache %llu, folio %u, %s%s",
		   shim_cfg.default_flags, shim_cfg.nr_paths,
		   (unsigned long long)shim_cfg.cache_size, shim_cfg.folio_size,
		   shim_cfg.disabled ? "disabled" : "enabled",
		   remote_on ? ", shared (the holder's cache)" : "");
}

void shim_init(void)
{
	pthread_once(&init_once, init);
}

bool shim_path_served(const char *abs)
{
	int i;

	for (i = 0; i < shim_cfg.nr_paths; i++) {
		size_t n = shim_cfg.path_lens[i];

		if (n == 1 && shim_cfg.paths[i][0] == '/')
			return true;
		if (!strncmp(abs, shim_cfg.paths[i], n) &&
		    (abs[n] == '/' || abs[n] == 0))
			return true;
	}
	return false;
}

struct wtio_ctx *shim_ctx(void)
{
	struct wtio_config cfg;
	struct wtio_ctx *c;
	int ret;

	if (remote_on)		/* the holder has the program's one cache */
		return NULL;
	pthread_mutex_lock(&ctx_lock);
	if (!ctx && !ctx_failed && !shim_sys_ok()) {
		/* libwtio's calls would reach the interposers instead */
		ctx_failed = true;
		shim_complain("libc lacks a function libwtio calls; serving nothing");
	}
	if (!ctx && !ctx_failed) {
		wtio_config_init(&cfg);
		if (shim_cfg.cache_size)
			cfg.cache_size = shim_cfg.cache_size;
		cfg.folio_size = shim_cfg.folio_size;
		/* A program streaming a file (cp, dd, tar) reads it ahead in
		 * I/Os of max_io_size, a few in flight, as the kernel's
		 * readahead does with large requests. */
		cfg.readahead_max = SHIM_READAHEAD;
		/* and a DONTCACHE stream too, into free folios that leave
		 * the cache as they are read */
		cfg.flags |= WTIO_CONFIG_DONTCACHE_READAHEAD;
		/* Files the program streams get large folios, those it
		 * writes in small blocks small ones (WTIO_LARGE_FOLIOS=0,
		 * which the library reads, turns it off). */
		cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS;
		/* The program's own threads submit to the context's channels
		 * (started writeback, making room, readahead). An io_uring
		 * completion is delivered to its submitter as task work,
		 * which makes signal_pending() true for a moment and cuts an
		 * interruptible read the program is in (dd's read of
		 * /dev/zero came back short, and dd wrote a short file);
		 * Linux AIO completes without touching the submitter.
		 * WTIO_IO_CHANNEL=io_uring still chooses io_uring. */
		cfg.flags |= WTIO_CONFIG_AIO_CHANNELS;
		/* wtio wants readahead within a quarter of the cache: a small
		 * budget (down to 64K) reads ahead less instead of failing */
		if (cfg.readahead_max > cfg.cache_size / 4)
			cfg.readahead_max = (uint32_t)(cfg.cache_size / 4 /
						       4096 * 4096);
		ret = wtio_ctx_create(&cfg, &ctx);
		if (ret) {
			ctx = NULL;
			ctx_failed = true;
			shim_complain("wtio_ctx_create: %s; serving nothing",
				      wtio_strerror(ret));
		}
	}
	c = ctx;
	pthread_mutex_unlock(&ctx_lock);
	return c;
}

/* WTIO_STATS=FILE, at exit once every file is closed (written back):
 * what the process's cache did, so that a program's I/Os can be counted
 * (their number and mean size) without tracing the kernel. To a file, or
 * to the stderr the process started with (stats_init). */
void shim_stats_report(void)
{
	static atomic_bool said;
	struct wtio_stats st;
	char buf[512];
	int n, fd;

	if (!shim_cfg.stats || !ctx || atomic_exchange(&said, true) ||
	    wtio_stats(ctx, &st))
		return;
	n = snprintf(buf, sizeof(buf),
		     "wtio-preload[%d]: stats read_ios %llu bytes_read %llu "
		     "write_ios %llu bytes_written %llu hits %llu misses %llu "
		     "readahead %llu dropbehind %llu throttle_waits %llu "
		     "evictions %llu cached %llu failed_dropped %llu\n",
		     (int)getpid(),
		     (unsigned long long)st.read_ios,
		     (unsigned long long)st.bytes_read,
		     (unsigned long long)st.write_ios,
		     (unsigned long long)st.bytes_written,
		     (unsigned long long)st.hits,
		     (unsigned long long)st.misses,
		     (unsigned long long)st.readahead_folios,
		     (unsigned long long)st.dropbehind_folios,
		     (unsigned long long)st.throttle_waits,
		     (unsigned long long)st.evictions,
		     (unsigned long long)st.cached_folios,
		     (unsigned long long)st.failed_dropped_folios);
	if (n <= 0 || !real.open || !real.write)
		return;
	if (stats_fd >= 0) {
		struct stat now;

		if (real.fstat(stats_fd, &now) == 0 &&
		    now.st_dev == stats_st.st_dev &&
		    now.st_ino == stats_st.st_ino)
			real.write(stats_fd, buf, (size_t)n < sizeof(buf) ?
				   (size_t)n : sizeof(buf) - 1);
		return;
	}
	fd = real.open(shim_cfg.stats, O_WRONLY | O_CREAT | O_APPEND |
		       O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	real.write(fd, buf, (size_t)n < sizeof(buf) ? (size_t)n :
			    sizeof(buf) - 1);
	real.close(fd);
}

/* In a child after fork: the parent's context (its flusher threads are not
 * in the child) is abandoned, never used or destroyed here. */
void shim_ctx_forget(void)
{
	pthread_mutex_init(&ctx_lock, NULL);
	ctx = NULL;
	ctx_failed = false;
}
