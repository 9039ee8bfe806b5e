/* SPDX-License-Identifier: MIT */
/*
 * ctx.c - the holder's one wtio context and its opens. libwtio makes its
 * own open through its system call table (src/sys.h); the holder's entry
 * there hands it a dup of the served description while hctx_open runs,
 * exactly as the preload shim does (preload/open.c, shim_lib_open): a
 * served file keeps one open file description in the whole system.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx.h"
#include "log.h"
#include "shim_size.h"
#include "sys.h"

static struct wtio_ctx *ctx;
static unsigned int default_flags;
static uint32_t folio_size = 4096;
static uint64_t cache_size;
static __thread int handoff_fd = -1;
static int (*libc_open)(const char *, int, ...);

static int holder_lib_open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (handoff_fd >= 0) {
		int fd = fcntl(handoff_fd, F_DUPFD_CLOEXEC, 3);

		handoff_fd = -1;
		return fd;
	}
	if (flags & O_CREAT) {
		va_list ap;

		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return libc_open(path, flags, mode);
}

static int mode_flags(const char *m, unsigned int *f)
{
	if (!m || !*m || !strcmp(m, "writeback"))
		*f = 0;
	else if (!strcmp(m, "writethrough"))
		*f = WTIO_WRITETHROUGH;
	else if (!strcmp(m, "writethrough-noserial"))
		*f = WTIO_WRITETHROUGH | WTIO_NOSERIAL;
	else if (!strcmp(m, "dontcache"))
		*f = WTIO_DONTCACHE;
	else if (!strcmp(m, "adaptive"))
		*f = WTIO_ADAPTIVE;
	else
		return -EINVAL;
	return 0;
}

int hctx_create(void)
{
	struct wtio_config cfg;
	struct wtio_sys tab = wtio_sys_tab;
	const char *v, *why;
	uint64_t size = 128ull << 20;
	int ret;

	if (mode_flags(getenv("WTIO_MODE"), &default_flags)) {
		hlog("unknown WTIO_MODE '%s'", getenv("WTIO_MODE"));
		return -EINVAL;
	}
	if ((v = getenv("WTIO_DSYNC")) && *v == '1')
		default_flags |= WTIO_DSYNC;
	if ((v = getenv("WTIO_CACHE_SIZE")) && *v &&
	    shim_parse_size(v, &size, &why)) {
		hlog("WTIO_CACHE_SIZE=%s: %s", v, why);
		return -EINVAL;
	}
	if ((v = getenv("WTIO_FOLIO_SIZE")) && *v &&
	    shim_parse_folio_size(v, &folio_size, &why)) {
		hlog("WTIO_FOLIO_SIZE=%s: %s", v, why);
		return -EINVAL;
	}
	if (shim_check_budget(size, folio_size, &why)) {
		hlog("WTIO_CACHE_SIZE and WTIO_FOLIO_SIZE: %s", why);
		return -EINVAL;
	}
	libc_open = tab.open;
	tab.open = holder_lib_open;
	ret = wtio_sys_set(&tab);
	if (ret)
		return ret;
	wtio_config_init(&cfg);
	cfg.cache_size = size;
	cfg.folio_size = folio_size;
	/* as the shim: large folios for streamed files (WTIO_LARGE_FOLIOS=0
	 * turns them off) */
	cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS;
	/* as the shim: a small budget reads ahead less instead of failing */
	if (cfg.readahead_max > cfg.cache_size / 4)
		cfg.readahead_max = (uint32_t)(cfg.cache_size / 4 / 4096 * 4096);
	ret = wtio_ctx_create(&cfg, &ctx);
	if (ret) {
		ctx = NULL;
		hlog("wtio_ctx_create: %s", wtio_strerror(ret));
		return ret;
	}
	cache_size = size;
	return 0;
}

struct wtio_ctx *hctx(void)
{
	return ctx;
}

void hctx_debug_config(void)
{
	hdebug("the program's cache: %llu bytes, folio %u",
	       (unsigned long long)cache_size, folio_size);
}

uint32_t hctx_folio_size(void)
{
	return folio_size;
}

unsigned int hctx_default_flags(void)
{
	return default_flags;
}

int hctx_open(int fd, int oflags, struct wtio_file **wf)
{
	char pp[64];
	int ret;

	snprintf(pp, sizeof(pp), "/proc/self/fd/%d", fd);
	handoff_fd = fd;
	ret = wtio_open(ctx, pp, oflags, 0, default_flags, wf);
	handoff_fd = -1;
	return ret;
}
