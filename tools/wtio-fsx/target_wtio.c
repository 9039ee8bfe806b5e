/* SPDX-License-Identifier: MIT */
/* target_wtio.c - the file under test, through wtio. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "wtio.h"
#include "fsx.h"

struct wt_priv {
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct wtio_queue *q;
	struct wtio_file_info info;
};

uint64_t fsx_adaptive_writethrough;

static struct wt_priv *P(struct fsx_target *t)
{
	return t->priv;
}

static int ctx_make(struct fsx_target *t)
{
	const struct fsx_opts *o = t->o;
	struct wtio_config cfg;
	int ret;

	wtio_config_init(&cfg);
	cfg.folio_size = o->folio_size;
	cfg.cache_size = o->cache_size ? o->cache_size :
		(uint64_t)o->folio_size * 32;
	if (cfg.readahead_max > cfg.cache_size / 4)
		cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	if (cfg.readahead_max < o->folio_size)
		cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	cfg.backend = (uint32_t)o->backend;
	if (o->adaptive == FSX_ADAPTIVE_CTX)
		cfg.flags |= WTIO_CONFIG_ADAPTIVE;
	if (o->large_folios)
		cfg.flags |= WTIO_CONFIG_LARGE_FOLIOS;
	if (o->keep_closed)
		cfg.flags |= WTIO_CONFIG_KEEP_CLOSED;
	ret = wtio_ctx_create(&cfg, &P(t)->ctx);
	if (ret) {
		fprintf(stderr, "wtio-fsx: wtio_ctx_create: %s%s\n",
			wtio_strerror(ret), ret == -EINVAL &&
			(getenv("WTIO_LARGE_FOLIOS") || getenv("WTIO_IO_CHANNEL")) ?
			" (WTIO_LARGE_FOLIOS takes 0 or 1, WTIO_IO_CHANNEL aio "
			"or io_uring)" : "");
		return ret;
	}
	ret = wtio_queue_create(P(t)->ctx, 16, &P(t)->q);
	if (ret)
		fprintf(stderr, "wtio-fsx: wtio_queue_create: %s\n",
			wtio_strerror(ret));
	return ret;
}

static int w_open(struct fsx_target *t, bool truncate)
{
	int ret;

	if (!P(t)->ctx && (ret = ctx_make(t)))
		return ret;
	ret = wtio_open(P(t)->ctx, t->o->path,
			O_RDWR | O_CREAT | (truncate ? O_TRUNC : 0), 0644,
			t->o->adaptive == FSX_ADAPTIVE_FILE ? WTIO_ADAPTIVE : 0,
			&P(t)->f);
	if (ret) {
		fprintf(stderr, "wtio-fsx: wtio_open(%s): %s\n", t->o->path,
			wtio_strerror(ret));
		return ret;
	}
	return wtio_file_info(P(t)->f, &P(t)->info);
}

/* Before a context goes: count what its adaptive writes did. */
static void count_adaptive(struct fsx_target *t)
{
	struct wtio_stats st;

	if (P(t)->ctx && wtio_stats(P(t)->ctx, &st) == 0)
		fsx_adaptive_writethrough += st.adaptive_writethrough;
}

static int w_close(struct fsx_target *t, bool new_ctx)
{
	int ret = wtio_close(P(t)->f), r2;

	P(t)->f = NULL;
	if (new_ctx) {
		count_adaptive(t);
		r2 = wtio_queue_destroy(P(t)->q);
		if (!ret)
			ret = r2;
		r2 = wtio_ctx_destroy(P(t)->ctx);
		if (!ret)
			ret = r2;
		P(t)->q = NULL;
		P(t)->ctx = NULL;
	}
	return ret;
}

/* Cut [buf, buf+len) into nsegs iovecs of uneven sizes. */
static int make_iov(struct iovec *iov, const void *buf, size_t len, int nsegs)
{
	size_t done = 0;
	int i;

	for (i = 0; i < nsegs; i++) {
		size_t n = i == nsegs - 1 ? len - done :
			(len - done) / 2 + (size_t)i * 3 % 7;

		if (n > len - done)
			n = len - done;
		iov[i].iov_base = (char *)buf + done;
		iov[i].iov_len = n;
		done += n;
	}
	return nsegs;
}

static ssize_t w_pread(struct fsx_target *t, void *buf, size_t len, off_t off,
		       unsigned flags, int nsegs)
{
	struct iovec iov[8];

	if (nsegs <= 1)
		return wtio_pread(P(t)->f, buf, len, off, flags);
	return wtio_preadv(P(t)->f, iov, make_iov(iov, buf, len, nsegs), off,
			   flags);
}

static ssize_t w_pwrite(struct fsx_target *t, const void *buf, size_t len,
			off_t off, unsigned flags, int nsegs)
{
	struct iovec iov[8];

	if (nsegs <= 1)
		return wtio_pwrite(P(t)->f, buf, len, off, flags);
	return wtio_pwritev(P(t)->f, iov, make_iov(iov, buf, len, nsegs), off,
			    flags);
}

static int w_truncate(struct fsx_target *t, off_t len)
{
	return wtio_ftruncate(P(t)->f, len);
}

static int w_fsync(struct fsx_target *t, bool data_only)
{
	return data_only ? wtio_fdatasync(P(t)->f) : wtio_fsync(P(t)->f);
}

static int w_sync_range(struct fsx_target *t, off_t off, off_t len,
			unsigned flags)
{
	return wtio_sync_range(P(t)->f, off, len, flags);
}

static off_t w_size(struct fsx_target *t)
{
	return wtio_file_size(P(t)->f);
}

static int w_q_write(struct fsx_target *t, const void *buf, size_t len,
		     off_t off, unsigned flags, uint64_t tag)
{
	return wtio_queue_pwrite(P(t)->q, P(t)->f, buf, len, off, flags, tag);
}

static int w_q_read(struct fsx_target *t, void *buf, size_t len, off_t off,
		    unsigned flags, uint64_t tag)
{
	return wtio_queue_pread(P(t)->q, P(t)->f, buf, len, off, flags, tag);
}

static int w_q_reap_all(struct fsx_target *t, uint64_t *tags, int64_t *res,
			int max)
{
	struct wtio_cqe cqe[16];
	int got = 0;

	while (wtio_queue_inflight(P(t)->q)) {
		int n = wtio_queue_reap(P(t)->q, cqe, 16, 1, -1), i;

		if (n < 0)
			return n;
		for (i = 0; i < n; i++) {
			if (got == max)
				return -EOVERFLOW;
			tags[got] = cqe[i].user_data;
			res[got] = cqe[i].res;
			got++;
		}
	}
	return got;
}

static void w_atomic_units(struct fsx_target *t, uint32_t *min, uint32_t *max)
{
	*min = P(t)->info.atomic_unit_min;
	*max = P(t)->info.atomic_unit_max;
}

static void w_destroy(struct fsx_target *t)
{
	if (P(t)->f)
		wtio_close(P(t)->f);
	if (P(t)->q)
		wtio_queue_destroy(P(t)->q);
	count_adaptive(t);
	if (P(t)->ctx)
		wtio_ctx_destroy(P(t)->ctx);
	free(t->priv);
}

static const struct fsx_target_ops wtio_ops = {
	.name = "wtio",
	.open = w_open,
	.close = w_close,
	.pread = w_pread,
	.pwrite = w_pwrite,
	.truncate = w_truncate,
	.fsync = w_fsync,
	.sync_range = w_sync_range,
	.size = w_size,
	.q_write = w_q_write,
	.q_read = w_q_read,
	.q_reap_all = w_q_reap_all,
	.atomic_units = w_atomic_units,
	.destroy = w_destroy,
};

int fsx_target_wtio(struct fsx_target *t, const struct fsx_opts *o)
{
	t->ops = &wtio_ops;
	t->o = o;
	t->priv = calloc(1, sizeof(struct wt_priv));
	return t->priv ? 0 : -ENOMEM;
}
