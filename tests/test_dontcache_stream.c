/* SPDX-License-Identifier: MIT */
/*
 * test_dontcache_stream.c - a handle's sequential DONTCACHE writes
 * smaller than an I/O go to disk in I/Os of max_io_size
 * (src/dontcache_stream.c), and nothing of them is lost or left cached.
 *
 *  1. A stream of 128 KiB DONTCACHE writes (psync backend, where started
 *     writeback is done in the call): the first write is on disk at its
 *     return; after each later one everything below the last whole
 *     1 MiB unit is on disk and at most one unit's data is dirty; the
 *     stream's writes make about one write I/O per MiB; at close the rest
 *     is written, every folio has been dropped behind, the disk equals
 *     the shadow.
 *  2. What ends a stream writes what waits: a DONTCACHE write elsewhere,
 *     a write without DONTCACHE, fsync: each leaves nothing dirty and the
 *     disk right.
 *  3. The same stream on the default backend (io_uring, the started
 *     writeback completed by the context's thread) with odd write sizes
 *     and an unaligned start: disk right after close, nothing cached,
 *     nothing dirty, I/Os about one a MiB.
 *
 * Runs on whatever filesystem the current directory is on.
 */
#include "helpers.h"

#define FS 4096u
#define MIB (1u << 20)

static struct wtio_ctx *mk_ctx(int backend)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = FS;
	cfg.cache_size = 16ull * MIB;
	cfg.max_io_size = MIB;
	cfg.backend = backend;
	return t_ctx_create(&cfg);
}

/* The disk's first len bytes equal the shadow's. */
static void check_disk_prefix(const char *path, const uint8_t *shadow,
			      size_t len, const char *what)
{
	size_t dlen;
	uint8_t *d = t_read_disk(path, &dlen);
	long long at;

	CHECKF(dlen >= len, "%s: disk has %zu bytes, want %zu", what, dlen,
	       len);
	at = t_memdiff(d, shadow, len);
	CHECKF(at < 0, "%s: disk differs at %lld", what, at);
	free(d);
}

/* Close f: nothing dirty, the cache back to where it was (a), nothing
 * evicted for the stream, the disk equal to the shadow. Returns the
 * stats after. */
static struct wtio_stats close_left_nothing(struct wtio_ctx *ctx,
					    struct wtio_file *f,
					    const struct wtio_stats *a,
					    const char *path,
					    const uint8_t *shadow, size_t size)
{
	struct wtio_stats b;

	CHECK_OK(wtio_close(f));
	b = t_stats(ctx);
	CHECK_EQ(b.dirty_folios, 0);
	CHECK_EQ(b.cached_folios, a->cached_folios);
	CHECK_EQ(b.evictions, a->evictions);
	t_check_disk_equals(path, shadow, size);
	return b;
}

static void stream_psync(void)
{
	struct wtio_ctx *ctx = mk_ctx(WTIO_BACKEND_PSYNC);
	const char *path = t_tmpfile("dc-stream");
	size_t cap = 8 * MIB, size = 0, chunk = 128 * 1024;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_file *f = t_open(ctx, path, O_RDWR | O_CREAT);
	struct wtio_stats a = t_stats(ctx), b;
	unsigned int i, n = 40;		/* 5 MiB */
	char what[64];

	for (i = 0; i < n; i++) {
		off_t off = (off_t)i * (off_t)chunk;

		t_pwrite_shadow(f, shadow, &size, off, chunk, 7 + i,
				WTIO_DONTCACHE);
		b = t_stats(ctx);
		snprintf(what, sizeof(what), "after write %u", i);
		if (i == 0) {
			/* Not a stream yet: started at once. */
			CHECK_EQ(b.dirty_folios, 0);
			check_disk_prefix(path, shadow, chunk, what);
			continue;
		}
		CHECKF(b.dirty_folios <= MIB / FS, "%s: %llu folios dirty",
		       what, (unsigned long long)b.dirty_folios);
		check_disk_prefix(path, shadow, size / MIB * MIB, what);
	}
	b = t_stats(ctx);
	/* The first write, then one I/O per whole MiB after it. */
	CHECKF(b.write_ios - a.write_ios <= 1 + size / MIB,
	       "%llu write I/Os for %zu bytes in %u writes",
	       (unsigned long long)(b.write_ios - a.write_ios), size, n);
	b = close_left_nothing(ctx, f, &a, path, shadow, size);
	CHECKF(b.dropbehind_folios - a.dropbehind_folios == size / FS,
	       "dropped %llu folios of %zu",
	       (unsigned long long)(b.dropbehind_folios - a.dropbehind_folios),
	       size / FS);
	printf("stream of %u 128 KiB DONTCACHE writes: %llu write I/Os, on "
	       "disk unit by unit, all dropped behind\n", n,
	       (unsigned long long)(b.write_ios - a.write_ios));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
}

/* A stream of 3 writes (384 KiB, below a unit: it waits), then how. */
static void stream_ends(const char *how)
{
	struct wtio_ctx *ctx = mk_ctx(WTIO_BACKEND_PSYNC);
	const char *path = t_tmpfile("dc-stream-end");
	size_t cap = 4 * MIB, size = 0, chunk = 128 * 1024;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_file *f = t_open(ctx, path, O_RDWR | O_CREAT);
	struct wtio_stats b;
	unsigned int i;

	for (i = 0; i < 3; i++)
		t_pwrite_shadow(f, shadow, &size, (off_t)(i * chunk), chunk,
				20 + i, WTIO_DONTCACHE);
	b = t_stats(ctx);
	CHECKF(b.dirty_folios > 0, "%s: nothing waits after 3 writes", how);
	if (!strcmp(how, "a DONTCACHE write elsewhere"))
		t_pwrite_shadow(f, shadow, &size, (off_t)(2 * MIB), 4096, 30,
				WTIO_DONTCACHE);
	else if (!strcmp(how, "a write without DONTCACHE"))
		t_pwrite_shadow(f, shadow, &size, (off_t)(3 * chunk), 4096, 31,
				0);
	else
		CHECK_OK(wtio_fsync(f));
	b = t_stats(ctx);
	/* What waited is on disk; a plain write's own data may be dirty. */
	if (!strcmp(how, "a write without DONTCACHE"))
		CHECKF(b.dirty_folios <= 1, "%s: %llu folios dirty", how,
		       (unsigned long long)b.dirty_folios);
	else
		CHECKF(b.dirty_folios == 0, "%s: %llu folios dirty", how,
		       (unsigned long long)b.dirty_folios);
	check_disk_prefix(path, shadow, 3 * chunk, how);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
	printf("a waiting stream is written by %s\n", how);
}

static void stream_default_backend(void)
{
	struct wtio_ctx *ctx = mk_ctx(WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("dc-stream-auto");
	size_t cap = 8 * MIB, size = 0;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_file *f = t_open(ctx, path, O_RDWR | O_CREAT);
	struct wtio_stats a = t_stats(ctx), b;
	off_t off = 3000;
	unsigned int i = 0;

	while ((size_t)off < 6 * MIB) {
		size_t len = 1000 + (size_t)(i * 7919) % (200 * 1024);

		t_pwrite_shadow(f, shadow, &size, off, len, 40 + i,
				WTIO_DONTCACHE);
		off += (off_t)len;
		i++;
	}
	b = close_left_nothing(ctx, f, &a, path, shadow, size);
	/* About one I/O a MiB (a unit can cut a folio's blocks in two
	 * I/Os at most), far below one a write. */
	CHECKF(b.write_ios - a.write_ios <= 2 * (size / MIB) + 4 &&
	       b.write_ios - a.write_ios < i / 2,
	       "%llu write I/Os for %zu bytes in %u writes",
	       (unsigned long long)(b.write_ios - a.write_ios), size, i);
	printf("default backend: %u odd DONTCACHE writes, %llu write I/Os, "
	       "nothing left cached\n", i,
	       (unsigned long long)(b.write_ios - a.write_ios));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(shadow);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	stream_psync();
	stream_ends("a DONTCACHE write elsewhere");
	stream_ends("a write without DONTCACHE");
	stream_ends("fsync");
	stream_default_backend();
	printf("PASS\n");
	return T_EXIT_PASS;
}
