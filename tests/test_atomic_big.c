/* SPDX-License-Identifier: MIT */
/*
 * test_atomic_big.c - untorn writes larger than the cache (issue 16,
 * defect 1).
 *
 * An atomic write used to keep every folio of its range under writeback
 * until its one RWF_ATOMIC I/O was issued, and then wait for the next
 * folio: with a 16-folio cache a 64 KiB atomic write of 4 KiB folios
 * returned and 128 KiB never did (wtio-fsx -S 9005 -f 4k -c 64k -o 128k
 * hung). On an XFS image on a loop device (root, loop devices and
 * xfsprogs; else exit 77 with the reason), under a watchdog so that a
 * hang fails the test:
 *
 *  A. in the smallest cache (16 folios) of 4 KiB, 64 KiB and 1 MiB
 *     folios, on io_uring and psync: atomic writes of every power of two
 *     from the minimum unit to the maximum (capped at 4 MiB) over data
 *     partly dirty in the cache, extending with DSYNC, with DONTCACHE,
 *     and with NOWAIT over dirty data (-EAGAIN, nothing changed): each
 *     returns, and the range reads back new through wtio and on disk,
 *     the size exact;
 *  B. a failing large atomic write (fault backend, the fault on the
 *     RWF_ATOMIC I/O itself): -EIO, the range reads back all old in the
 *     cache and on disk, and an extending one leaves the size as it was;
 *  C. wtio-fsx (path in argv[1]) seeds 9005 and 9011: the issue's
 *     command (-f 4k -c 64k -b io_uring, 10000 ops), and with -o 128k
 *     on io_uring (3000 ops) and psync (2000): each completes (a run
 *     over its time limit fails). With the default op size (64 KiB) no
 *     atomic write exceeds the cache; the -o 128k runs are what hung
 *     before the fix (each of the four, well within its op count).
 */
#include "helpers.h"
#include "t_fault.h"
#include "xfs_loop.h"
#include "io/io.h"	/* RWF_ATOMIC */

#define MAX_LEN_CAP (4u << 20)

static void watchdog_fire(int sig)
{
	static const char msg[] = "FAIL: watchdog: an atomic write did not "
				  "return (hang)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(T_EXIT_FAIL);
	/* Not async-signal-safe, but a mount left behind is worse. */
	xl_cleanup();
	_exit(T_EXIT_FAIL);
}

static void watchdog(unsigned int seconds)
{
	signal(SIGALRM, watchdog_fire);
	alarm(seconds);
}

static struct wtio_ctx *mk_ctx(uint32_t fsz, uint32_t nr_folios,
			       uint32_t backend, struct wtio_fault *fault)
{
	struct wtio_config cfg;

	wtio_config_init(&cfg);
	cfg.folio_size = fsz;
	cfg.cache_size = (uint64_t)fsz * nr_folios;
	cfg.readahead_max = 0;
	cfg.flags |= WTIO_CONFIG_NO_READAHEAD;
	cfg.backend = backend;
	return t_ctx_create_over(&cfg, fault);
}

/* [off, off + len) of the file, read with O_DIRECT; and its size. */
static uint8_t *disk_range(const char *path, off_t off, size_t len,
			   off_t *size)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	uint8_t *buf;
	size_t done = 0;

	CHECK(fd >= 0);
	CHECK(posix_memalign((void **)&buf, 4096, len) == 0);
	memset(buf, 0, len);
	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done, off + (off_t)done);

		CHECK(n >= 0);
		if (n == 0)
			break;
		done += (size_t)n;
	}
	*size = lseek(fd, 0, SEEK_END);
	close(fd);
	return buf;
}

/* The range holds shadow's bytes through wtio and on disk; the sizes
 * (wtio's, and the backing file's after a fsync) are exactly size. */
static void check_range(struct wtio_file *f, const char *path,
			const uint8_t *shadow, size_t size, off_t off,
			size_t len, const char *what)
{
	off_t dsize;
	uint8_t *d;
	long long at;

	CHECKF(wtio_file_size(f) == (off_t)size, "%s: size %lld, want %zu",
	       what, (long long)wtio_file_size(f), size);
	t_check_wtio_range(f, shadow, size, off, len);
	d = disk_range(path, off, len, &dsize);
	at = t_memdiff(d, shadow + off, len);
	CHECKF(at < 0, "%s: disk differs at %lld (disk %02x, want %02x)", what, (long long)off + at, at < 0 ? 0 : d[at], at < 0 ? 0 : shadow[off + at]);
	free(d);
	(void)dsize;
}

static void check_disk_size(const char *path, size_t size, const char *what)
{
	off_t s = t_disk_size(path);

	CHECKF(s == (off_t)size, "%s: backing size %lld, want %zu", what,
	       (long long)s, size);
}

static ssize_t wr(struct wtio_file *f, uint8_t *shadow, size_t *size,
		  off_t off, size_t len, uint64_t seed, unsigned int flags)
{
	uint8_t *buf = t_malloc(len);
	ssize_t r;

	t_fill(buf, len, seed, (uint64_t)off);
	r = wtio_pwrite(f, buf, len, off, flags);
	if (r == (ssize_t)len && shadow) {
		memcpy(shadow + off, buf, len);
		if ((size_t)off + len > *size)
			*size = (size_t)off + len;
	}
	free(buf);
	return r;
}

/* ---- A ---- */

static void big_one(uint32_t fsz, uint32_t backend, size_t maxlen,
		    uint32_t minlen)
{
	struct wtio_ctx *ctx = mk_ctx(fsz, WTIO_MIN_FOLIOS, backend, NULL);
	const char *path = t_dir_file(xl.mnt, "big");
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	size_t cap = 10 * maxlen, size = 0, len;
	uint8_t *shadow = t_zalloc(cap);
	uint64_t seed = 100;
	unsigned int n = 0, eagain = 0;
	struct wtio_stats s0, s1;
	char what[128];

	/* The first 2 x maxlen on disk, durable. */
	CHECK_EQ(wr(f, shadow, &size, 0, 2 * maxlen, seed++, 0),
		 (long long)(2 * maxlen));
	CHECK_OK(wtio_fsync(f));
	s0 = t_stats(ctx);
	for (len = minlen; len <= maxlen; len *= 2) {
		off_t off = (off_t)len;
		size_t d;
		ssize_t r;

		/* 1: over data, with write-back data dirty in the range
		 * and beside it, more than the cache holds clean. */
		for (d = 0; d < len && d < 8 * (size_t)fsz; d += 3 * fsz)
			CHECK_EQ(wr(f, shadow, &size, off + (off_t)d + 100, 200,
				    seed++, 0), 200);
		snprintf(what, sizeof(what), "%s folio %uK atomic %zuK over "
			 "dirty data", backend == WTIO_BACKEND_PSYNC ? "psync" :
			 "io_uring", fsz >> 10, len >> 10);
		CHECKF(wr(f, shadow, &size, off, len, seed++, WTIO_ATOMIC) ==
		       (ssize_t)len, "%s: failed", what);
		check_range(f, path, shadow, size,
			    off > (off_t)fsz ? off - (off_t)fsz : 0,
			    len + 2 * fsz, what);

		/* 2: NOWAIT over dirty data: -EAGAIN and nothing changed,
		 * or (if a flusher cleaned it first) done. */
		snprintf(what, sizeof(what), "folio %uK atomic %zuK NOWAIT",
			 fsz >> 10, len >> 10);
		CHECK_EQ(wr(f, shadow, &size, off + 4096, 100, seed++, 0), 100);
		r = wr(f, shadow, &size, off, len, seed++,
		       WTIO_ATOMIC | WTIO_NOWAIT);
		CHECKF(r == (ssize_t)len || r == -EAGAIN, "%s: %zd", what, r);
		eagain += r == -EAGAIN;
		/* The dirty data is on disk only once written back. */
		t_check_wtio_range(f, shadow, size, off, len);
		CHECK_OK(wtio_fsync(f));
		check_range(f, path, shadow, size, off, len, what);

		/* 3: extending, DSYNC, one unit past the end. */
		off = (off_t)((size + len - 1) / len * len + len);
		CHECK((size_t)off + len <= cap);
		snprintf(what, sizeof(what), "folio %uK atomic %zuK extending "
			 "DSYNC", fsz >> 10, len >> 10);
		CHECKF(wr(f, shadow, &size, off, len, seed++,
			  WTIO_ATOMIC | WTIO_DSYNC) == (ssize_t)len,
		       "%s: failed", what);
		check_range(f, path, shadow, size, off - (off_t)len, 2 * len,
			    what);
		check_disk_size(path, size, what);

		/* 4: DONTCACHE over the range just written. */
		CHECKF(wr(f, shadow, &size, off, len, seed++,
			  WTIO_ATOMIC | WTIO_DONTCACHE) == (ssize_t)len,
		       "folio %uK atomic %zuK DONTCACHE: failed", fsz >> 10,
		       len >> 10);
		snprintf(what, sizeof(what), "folio %uK atomic %zuK DONTCACHE",
			 fsz >> 10, len >> 10);
		check_range(f, path, shadow, size, off, len, what);
		n += 4;
	}
	s1 = t_stats(ctx);
	CHECK(s1.atomic_writes - s0.atomic_writes >= n - eagain);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("  %-8s folio %4uK, cache 16 folios: %u atomic writes of "
	       "%uK..%zuK returned and read back (%u NOWAIT -EAGAIN)\n",
	       backend == WTIO_BACKEND_PSYNC ? "psync" : "io_uring",
	       fsz >> 10, n, minlen >> 10, maxlen >> 10, eagain);
	unlink(path);
	free(shadow);
}

/* ---- B ---- */

/* Fail the next RWF_ATOMIC write: the range is clean (fsync'd), so the
 * atomic I/O is the first write in it; the trace proves it was. */
static void fail_one(uint32_t fsz, size_t len)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_ctx *ctx = mk_ctx(fsz, WTIO_MIN_FOLIOS, 0, fault);
	const char *path = t_dir_file(xl.mnt, "fail");
	struct wtio_file *f = t_open(ctx, path, O_RDWR);
	size_t cap = 4 * len, size = 0;
	uint8_t *shadow = t_zalloc(cap);
	struct wtio_fault_rule rule = { 0 };
	struct wtio_stats a, b;
	int k;

	CHECK(fault);
	CHECK_EQ(wr(f, shadow, &size, 0, 2 * len, 1, 0), (long long)(2 * len));
	CHECK_OK(wtio_fsync(f));
	/* Cache some of the range: the old data must stay there. */
	t_check_wtio_range(f, shadow, size, (off_t)len, 8 * fsz);
	for (k = 0; k < 2; k++) {
		/* k 0: over data; k 1: extending, past the end. */
		off_t off = k ? (off_t)(2 * len) : (off_t)len;
		uint64_t from = wtio_fault_nr_ios(fault), i, atomics = 0;
		off_t size0 = wtio_file_size(f);
		ssize_t r;
		int ret;

		rule.ops = WTIO_FAULT_WRITE;
		rule.count = 1;
		rule.error = EIO;
		rule.start = off;
		rule.end = off + (off_t)len;
		CHECK_OK(wtio_fault_add_rule(fault, &rule));
		a = t_stats(ctx);
		r = wr(f, shadow, &size, off, len, 50 + (uint64_t)k,
		       WTIO_ATOMIC);
		CHECKF(r == -EIO, "failing atomic %zuK: %zd", len >> 10, r);
		CHECK_EQ(wtio_fault_injected(fault), (uint64_t)k + 1);
		wtio_fault_clear_rules(fault);
		b = t_stats(ctx);
		CHECK_EQ(b.atomic_writes, a.atomic_writes);
		for (i = from; i < wtio_fault_nr_ios(fault); i++) {
			struct wtio_fault_io io;

			CHECK_OK(wtio_fault_get_io(fault, i, &io));
			if (io.op == WTIO_FAULT_WRITE &&
			    (io.rw_flags & RWF_ATOMIC)) {
				CHECK(io.off == off && io.len == len);
				atomics++;
			} else {
				CHECKF(io.op != WTIO_FAULT_WRITE,
				       "a plain write before the atomic one");
			}
		}
		CHECKF(atomics == 1, "%llu RWF_ATOMIC I/Os issued, want 1",
		       (unsigned long long)atomics);
		CHECK_EQ(wtio_file_size(f), size0);
		t_check_wtio_range(f, shadow, size, 0, size);
		check_disk_size(path, size, "after a failed atomic write");
		/* The error is reported once more, to fsync (as a failed
		 * write-through write's); after that fsync succeeds. */
		ret = wtio_fsync(f);
		CHECKF(ret == 0 || ret == -EIO, "fsync: %d", ret);
		CHECK_OK(wtio_fsync(f));
		t_check_disk_equals(path, shadow, size);
	}
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	unlink(path);
	free(shadow);
	printf("  folio %2uK, cache 16 folios: failing %zuK atomic write "
	       "(RWF_ATOMIC I/O issued and failed) -> -EIO, range all old in "
	       "cache and on disk, size unchanged (over data, extending)\n",
	       fsz >> 10, len >> 10);
}

/* ---- C ---- */

static int fsx_runs(const char *fsx)
{
	static const char *const variants[] = {
		"-f 4k -c 64k -b io_uring",
		"-N 3000 -f 4k -c 64k -b io_uring -o 128k",
		"-N 2000 -f 4k -c 64k -b psync -o 128k",
	};
	static const unsigned int seeds[] = { 9005, 9011 };
	unsigned int v, s, runs = 0;
	char cmd[1024];

	for (v = 0; v < 3; v++) {
		for (s = 0; s < 2; s++) {
			int st, rc;

			snprintf(cmd, sizeof(cmd), "timeout -k 10 150 '%s' -q "
				 "-S %u %s '%s/fsx'", fsx, seeds[s],
				 variants[v], xl.mnt);
			printf("+ %s\n", cmd);
			fflush(stdout);
			st = system(cmd);
			rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
			CHECKF(rc != 124 && rc != 137, "wtio-fsx -S %u %s did "
			       "not finish in 150 s (hang)", seeds[s],
			       variants[v]);
			CHECKF(rc == 0, "wtio-fsx -S %u %s failed (%d)",
			       seeds[s], variants[v], rc);
			runs++;
		}
	}
	return (int)runs;
}

int main(int argc, char **argv)
{
	uint32_t fszs[] = { 4096, 65536, 1u << 20 };
	uint32_t backends[] = { WTIO_BACKEND_IO_URING, WTIO_BACKEND_PSYNC };
	struct wtio_file_info info;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	unsigned int a, b;
	size_t maxlen;
	int ret, runs;

	setvbuf(stdout, NULL, _IOLBF, 0);
	t_require_odirect();
	if (argc < 2 || access(argv[1], X_OK) != 0)
		t_skip("no wtio-fsx given (argv[1]): part C cannot run");
	ret = xl_setup("atomic-big", "");
	if (ret == XL_SKIP)
		t_skip("%s", xl.why);
	CHECKF(ret == XL_OK, "%s", xl.why);

	ctx = mk_ctx(4096, WTIO_MIN_FOLIOS, WTIO_BACKEND_AUTO, NULL);
	f = t_open(ctx, t_dir_file(xl.mnt, "probe"), O_RDWR);
	CHECK_OK(wtio_file_info(f, &info));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("xfs: atomic write unit %u..%u\n", info.atomic_unit_min,
	       info.atomic_unit_max);
	if (info.atomic_unit_max < 131072) {
		xl_cleanup();
		t_skip("XFS here takes atomic writes up to %u bytes only: none "
		       "is larger than a 16-folio cache of 4 KiB folios",
		       info.atomic_unit_max);
	}
	maxlen = info.atomic_unit_max < MAX_LEN_CAP ? info.atomic_unit_max :
		 MAX_LEN_CAP;

	watchdog(60);
	printf("A: atomic writes up to %zuK in a 16-folio cache\n",
	       maxlen >> 10);
	for (a = 0; a < 3; a++)
		for (b = 0; b < 2; b++)
			big_one(fszs[a], backends[b], maxlen,
				info.atomic_unit_min > 4096 ?
				info.atomic_unit_min : 4096);
	printf("B: failing atomic writes larger than the cache\n");
	fail_one(4096, 131072);
	fail_one(4096, maxlen);
	fail_one(65536, maxlen);
	alarm(0);

	printf("C: wtio-fsx seeds 9005, 9011\n");
	runs = fsx_runs(argv[1]);
	printf("  %d wtio-fsx runs completed\n", runs);

	t_remove_dir_files();
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	printf("PASS\n");
	return T_EXIT_PASS;
}
