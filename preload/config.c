/* SPDX-License-Identifier: MIT */
/*
 * config.c - the WTIO_* environment settings and the one wtio context.
 *
 *   WTIO_MODE        writeback (default) | writethrough |
 *                    writethrough-noserial | dontcache
 *   WTIO_DSYNC       1: every write is WTIO_DSYNC (data integrity on return)
 *   WTIO_PATHS       colon-separated directories served (default: the
 *                    current directory when the program starts)
 *   WTIO_CACHE_SIZE  cache budget, bytes with optional K/M/G suffix
 *                    (default 128M)
 *   WTIO_DISABLE     1: serve nothing (everything passes through)
 *   WTIO_DEBUG       1: one line on stderr per decision
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

struct shim_config shim_cfg;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct wtio_ctx *ctx;
static bool ctx_failed;

void shim_debug(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	if (!shim_cfg.debug)
		return;
	n = snprintf(buf, sizeof(buf), "wtio-preload[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (real.write)
		real.write(2, buf, (size_t)n);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: break;
	}
	return v;
}

static void add_path(const char *p)
{
	char resolved[PATH_MAX];
	size_t len;

	if (!*p || !realpath(p, resolved))
		return;
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
}

static void init(void)
{
	const char *mode = getenv("WTIO_MODE");
	const char *v;

	shim_resolve();
	BUSY_ENTER();	/* realpath() below opens nothing, but be sure */
	shim_cfg.debug = (v = getenv("WTIO_DEBUG")) && *v == '1';
	shim_cfg.disabled = (v = getenv("WTIO_DISABLE")) && *v == '1';
	if (!mode || !*mode || !strcmp(mode, "writeback"))
		shim_cfg.default_flags = 0;
	else if (!strcmp(mode, "writethrough"))
		shim_cfg.default_flags = WTIO_WRITETHROUGH;
	else if (!strcmp(mode, "writethrough-noserial"))
		shim_cfg.default_flags = WTIO_WRITETHROUGH | WTIO_NOSERIAL;
	else if (!strcmp(mode, "dontcache"))
		shim_cfg.default_flags = WTIO_DONTCACHE;
	else {
		shim_cfg.disabled = true;
		shim_cfg.debug = true;
		shim_debug("unknown WTIO_MODE '%s': serving nothing", mode);
	}
	if ((v = getenv("WTIO_DSYNC")) && *v == '1')
		shim_cfg.default_flags |= WTIO_DSYNC;
	shim_cfg.cache_size = 128ull << 20;
	if ((v = getenv("WTIO_CACHE_SIZE")) && *v)
		shim_cfg.cache_size = parse_size(v);
	v = getenv("WTIO_PATHS");
	if (v && *v) {
		char *copy = strdup(v), *save = NULL, *tok;

		for (tok = strtok_r(copy, ":", &save); tok;
		     tok = strtok_r(NULL, ":", &save))
			add_path(tok);
		free(copy);
	} else {
		add_path(".");
	}
	if (!shim_cfg.nr_paths)
		shim_cfg.disabled = true;
	BUSY_LEAVE();
	shim_debug("mode flags %#x, %d paths, cache %llu, %s",
		   shim_cfg.default_flags, shim_cfg.nr_paths,
		   (unsigned long long)shim_cfg.cache_size,
		   shim_cfg.disabled ? "disabled" : "enabled");
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

	pthread_mutex_lock(&ctx_lock);
	if (!ctx && !ctx_failed) {
		wtio_config_init(&cfg);
		if (shim_cfg.cache_size)
			cfg.cache_size = shim_cfg.cache_size;
		BUSY_ENTER();
		ret = wtio_ctx_create(&cfg, &ctx);
		BUSY_LEAVE();
		if (ret) {
			ctx = NULL;
			ctx_failed = true;
			shim_cfg.debug = true;
			shim_debug("wtio_ctx_create: %s; serving nothing",
				   wtio_strerror(ret));
		}
	}
	c = ctx;
	pthread_mutex_unlock(&ctx_lock);
	return c;
}

/* In a child after fork: the parent's context (its flusher threads are not
 * in the child) is abandoned, never used or destroyed here. */
void shim_ctx_forget(void)
{
	pthread_mutex_init(&ctx_lock, NULL);
	ctx = NULL;
	ctx_failed = false;
}
