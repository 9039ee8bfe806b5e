/* SPDX-License-Identifier: MIT */
/*
 * t_fault.h - helpers for tests over the test library's fault backend
 * (tests/lib/wtio_fault.h): its configuration and its contexts.
 */
#ifndef WTIO_T_FAULT_H
#define WTIO_T_FAULT_H

#include "helpers.h"
#include "wtio_fault.h"

/*
 * Defaults (wtio_config_init) with a budget of nr_folios folios of
 * folio_size bytes, for a context of the fault backend. The caller sets
 * further fields, then creates the context with its recorder
 * (t_fault_ctx_create, t_fault_ctx_create_or_skip).
 */
static inline void t_fault_config(struct wtio_config *cfg,
				  uint32_t folio_size, uint64_t nr_folios)
{
	wtio_config_init(cfg);
	cfg->folio_size = folio_size;
	cfg->cache_size = (uint64_t)folio_size * nr_folios;
}

/* wtio_fault_ctx_create(cfg, fault), which must succeed. */
static inline struct wtio_ctx *t_fault_ctx_create(const struct wtio_config *cfg,
						  struct wtio_fault *fault)
{
	struct wtio_ctx *ctx = NULL;
	int ret = wtio_fault_ctx_create(cfg, fault, &ctx);

	CHECKF(ret == 0, "wtio_fault_ctx_create: %s", strerror(-ret));
	return ctx;
}

/* The same; -EOPNOTSUPP (from the context's setup, not the backend,
 * which works wherever psync does) skips the test. */
static inline struct wtio_ctx *
t_fault_ctx_create_or_skip(const struct wtio_config *cfg,
			   struct wtio_fault *fault)
{
	struct wtio_ctx *ctx = NULL;
	int ret = wtio_fault_ctx_create(cfg, fault, &ctx);

	if (ret == -EOPNOTSUPP)
		t_skip("fault backend context not available here");
	CHECKF(ret == 0, "wtio_fault_ctx_create: %s", strerror(-ret));
	return ctx;
}

/* With a recorder, t_fault_ctx_create_or_skip(cfg, fault); without,
 * t_ctx_create_or_skip(cfg) (cfg->backend): for tests run over both. */
static inline struct wtio_ctx *t_ctx_create_over(const struct wtio_config *cfg,
						 struct wtio_fault *fault)
{
	return fault ? t_fault_ctx_create_or_skip(cfg, fault) :
		       t_ctx_create_or_skip(cfg);
}

/* A fault-backend context (t_fault_config) whose readahead limit is a
 * quarter of the budget; it must be created. */
static inline struct wtio_ctx *t_fault_ctx(struct wtio_fault *fault,
					   uint32_t folio_size,
					   uint64_t nr_folios)
{
	struct wtio_config cfg;

	t_fault_config(&cfg, folio_size, nr_folios);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	return t_fault_ctx_create(&cfg, fault);
}

/* A fault-backend context in the asynchronous mode (channels, the
 * append plug, asynchronous readahead: wtio_fault_set_async) over cfg. */
static inline struct wtio_ctx *t_fault_async_ctx(struct wtio_config *cfg,
						 struct wtio_fault *fault)
{
	wtio_fault_set_async(fault, true);
	return t_fault_ctx_create_or_skip(cfg, fault);
}

/* Replay the record of path up to nr events under seed into the file
 * dst (emptied first): its bytes (malloc'd) and their count in *len,
 * what the replay did in *ri. */
static inline uint8_t *t_fault_replay_read(struct wtio_fault *fault,
					   const char *path, const char *dst,
					   uint64_t nr, uint64_t seed,
					   size_t *len,
					   struct wtio_fault_replay_info *ri)
{
	int fd = open(dst, O_RDWR | O_TRUNC);
	struct stat st;
	uint8_t *d;

	CHECK(fd >= 0);
	CHECK_OK(wtio_fault_replay_ex(fault, path, nr, seed, fd, ri));
	CHECK_OK(fstat(fd, &st));
	d = t_malloc((size_t)st.st_size + 1);
	CHECK_EQ(pread(fd, d, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return d;
}

/* A new context over fault (cfg) in *ctxp and a handle of path in it,
 * holding len bytes of old written through wtio and made durable, so
 * that the record (where a replay starts) has them. */
static inline struct wtio_file *t_fault_durable_file(struct wtio_fault *fault,
						     const struct wtio_config *cfg,
						     const char *path,
						     const uint8_t *old,
						     size_t len,
						     struct wtio_ctx **ctxp)
{
	struct wtio_file *f;

	*ctxp = t_fault_ctx_create_or_skip(cfg, fault);
	f = t_open(*ctxp, path, O_RDWR);
	CHECK_EQ(wtio_pwrite(f, old, len, 0, 0), (ssize_t)len);
	CHECK_OK(wtio_fsync(f));
	return f;
}

/* A crash after the first nr events of the record, under seeds 0 to
 * nseeds - 1 (replayed into dst): the file is len bytes long each
 * time, old's (unless NULL). what names the case in a failure. */
static inline void t_fault_check_crash_equals(struct wtio_fault *fault,
					      const char *path,
					      const char *dst, uint64_t nr,
					      uint64_t nseeds,
					      const uint8_t *old, size_t len,
					      const char *what)
{
	struct wtio_fault_replay_info ri;
	uint64_t seed;
	size_t got;
	uint8_t *d;

	for (seed = 0; seed < nseeds; seed++) {
		d = t_fault_replay_read(fault, path, dst, nr, seed, &got, &ri);
		CHECKF(got == len, "%s: crash, seed %llu: %zu bytes, want %zu",
		       what, (unsigned long long)seed, got, len);
		CHECKF(!old || t_memdiff(d, old, len) < 0, "%s: crash, seed %llu: "
		       "the old data differs", what,
		       (unsigned long long)seed);
		free(d);
	}
}

/* The trace's I/Os of op (WTIO_FAULT_*) of more than min_len bytes
 * (and, with chan, only those submitted to a channel; with faulted,
 * only those a rule matched): how many, and the longest in *maxp. */
static inline uint64_t t_fault_trace_count(struct wtio_fault *fault,
					   uint32_t op, uint64_t min_len,
					   bool chan, bool faulted,
					   uint64_t *maxp)
{
	struct wtio_fault_io io;
	uint64_t i, n = 0, max = 0;

	for (i = 0; i < wtio_fault_nr_ios(fault); i++) {
		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op != op || io.len <= min_len || (chan && !io.chan) ||
		    (faulted && !io.faulted))
			continue;
		n++;
		if (io.len > max)
			max = io.len;
	}
	if (maxp)
		*maxp = max;
	return n;
}

#endif /* WTIO_T_FAULT_H */
