/* SPDX-License-Identifier: MIT */
/*
 * test_keep_closed.c - WTIO_CONFIG_KEEP_CLOSED: a closed file's cache
 * stays in the context and is written back later, never lost or stale.
 *  - close writes nothing back; a reopen reads every byte from the cache;
 *    after wtio_ctx_destroy another process's plain read sees every byte
 *    and the exact size;
 *  - the flushers write a closed file back and make its size exact;
 *  - unlink, then a new file at the path (inode numbers free to be
 *    reused): the new file is never served the old cache;
 *  - a write-back EIO after the last close is reported by the next
 *    handle's fsync, or, with no handle, by wtio_ctx_destroy;
 *  - at most half the descriptor limit is kept, and an open that finds
 *    no descriptor left evicts the oldest instead of failing;
 *  - past the cap, a file holding data a failed write-back gave back is
 *    not evicted while another can be;
 *  - near the cap the flushers write closed files back ahead of their
 *    eviction, as many as were closed, oldest first, far below the dirty
 *    thresholds and long before the data expires.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "helpers.h"
#include "t_fault.h"

#define NR_CAP_FILES 100

static void keep_config(struct wtio_config *cfg, bool fast_flush)
{
	wtio_config_init(cfg);
	cfg->cache_size = 4096ull * 2048;
	cfg->flags |= WTIO_CONFIG_KEEP_CLOSED;
	if (fast_flush) {
		cfg->dirty_expire_ms = 1;
		cfg->writeback_interval_ms = 10;
	}
}

static struct wtio_file *open_or_skip(struct wtio_ctx *ctx, const char *path,
				      int oflags)
{
	return t_open(ctx, path, oflags);
}

static void write_file(struct wtio_ctx *ctx, const char *path,
		       const uint8_t *data, size_t len)
{
	struct wtio_file *f = open_or_skip(ctx, path,
					   O_RDWR | O_CREAT | O_TRUNC);

	CHECK_EQ(wtio_pwrite(f, data, len, 0, 0), (long long)len);
	CHECK_OK(wtio_close(f));
}

/* What another process reads with plain system calls. */
static void check_disk_other_process(const char *path, const uint8_t *data,
				     size_t len)
{
	pid_t pid = fork();
	int status;

	CHECK(pid >= 0);
	if (pid == 0) {
		t_check_disk_equals(path, data, len);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "%s: another process read other bytes", path);
}

static void test_reopen(void)
{
	static const size_t sizes[] = { 100, 4096, 10000, 70000 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	const char *paths[N];
	uint8_t *data[N];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_stats s0, s1;
	struct wtio_file *f;
	int i;

	keep_config(&cfg, false);
	ctx = t_ctx_create_or_skip(&cfg);
	for (i = 0; i < N; i++) {
		paths[i] = t_tmpfile("keep");
		data[i] = t_malloc(sizes[i]);
		t_fill(data[i], sizes[i], 100 + (uint64_t)i, 0);
		write_file(ctx, paths[i], data[i], sizes[i]);
	}
	/* Nothing was written back by the closes (data expires in 30 s). */
	s0 = t_stats(ctx);
	CHECK(s0.dirty_folios > 0);
	for (i = 0; i < N; i++)
		CHECKF(t_disk_size(paths[i]) == 0, "%s: close wrote %lld bytes",
		       paths[i], (long long)t_disk_size(paths[i]));
	/* A reopen is served the closed file's cache: every byte, no read. */
	for (i = 0; i < N; i++) {
		f = open_or_skip(ctx, paths[i], O_RDONLY);
		CHECK_EQ(wtio_file_size(f), (long long)sizes[i]);
		t_check_wtio_range(f, data[i], sizes[i], 0, sizes[i]);
		CHECK_OK(wtio_close(f));
	}
	s1 = t_stats(ctx);
	CHECK_EQ(s1.misses, s0.misses);
	CHECK_EQ(s1.read_ios, s0.read_ios);
	/* Changed after a reopen, closed again. */
	f = open_or_skip(ctx, paths[2], O_RDWR);
	t_fill(data[2] + 50, 3000, 7, 50);
	CHECK_EQ(wtio_pwrite(f, data[2] + 50, 3000, 50, 0), 3000);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	for (i = 0; i < N; i++) {
		check_disk_other_process(paths[i], data[i], sizes[i]);
		free(data[i]);
	}
	printf("  closed files: reopened from the cache, on disk after destroy: ok\n");
}

static void test_flusher_settles(void)
{
	static const size_t sizes[] = { 100, 5000 };
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	const char *paths[2];
	uint8_t *data[2];
	int i;

	keep_config(&cfg, true);
	ctx = t_ctx_create_or_skip(&cfg);
	for (i = 0; i < 2; i++) {
		paths[i] = t_tmpfile("keep-flush");
		data[i] = t_malloc(sizes[i]);
		t_fill(data[i], sizes[i], 200 + (uint64_t)i, 0);
		write_file(ctx, paths[i], data[i], sizes[i]);
	}
	/* The flushers write them back, then cut the block tail: the disk
	 * holds the file, exact, while the context lives. */
	for (i = 0; i < 2; i++) {
		uint64_t t0 = t_now_ms();

		while (t_disk_size(paths[i]) != (off_t)sizes[i] ||
		       t_stats(ctx).dirty_folios)
			CHECKF(t_now_ms() - t0 < 20000,
			       "%s: not written back after close (disk %lld)",
			       paths[i], (long long)t_disk_size(paths[i]));
		/* the size may be exact before the tail's write completes */
		while (t_stats(ctx).writeback_folios)
			usleep(1000);
		t_check_disk_equals(paths[i], data[i], sizes[i]);
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	for (i = 0; i < 2; i++) {
		t_check_disk_equals(paths[i], data[i], sizes[i]);
		free(data[i]);
	}
	printf("  closed files: written back by the flushers, exact size: ok\n");
}

static ino_t ino_of(const char *path)
{
	struct stat st;

	CHECK_OK(stat(path, &st));
	return st.st_ino;
}

static void test_unlink_recreate(void)
{
	const size_t len = 8192, len2 = 4096;
	uint8_t *old = t_malloc(len), *fresh = t_malloc(len2);
	const char *path = t_tmpfile("keep-unlink");
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int round, fd;

	keep_config(&cfg, false);
	ctx = t_ctx_create_or_skip(&cfg);
	/* Many rounds: a filesystem reuses a freed inode number readily. */
	for (round = 0; round < 40; round++) {
		ino_t was;

		t_fill(old, len, 300 + (uint64_t)round, 0);
		write_file(ctx, path, old, len);
		was = ino_of(path);
		CHECK_OK(unlink(path));
		t_fill(fresh, len2, 900 + (uint64_t)round, 0);
		fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
		CHECK(fd >= 0);
		CHECK_EQ(pwrite(fd, fresh, len2, 0), (long long)len2);
		CHECK_OK(fsync(fd));
		close(fd);
		/* The kept descriptor holds the old number. */
		CHECK(ino_of(path) != was);
		f = open_or_skip(ctx, path, O_RDONLY);
		CHECK_EQ(wtio_file_size(f), (long long)len2);
		t_check_wtio_range(f, fresh, len2, 0, len2);
		CHECK_OK(wtio_close(f));
		CHECK_OK(unlink(path));
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	/* t_tmpfile's exit cleanup expects the name */
	fd = open(path, O_RDWR | O_CREAT, 0600);
	CHECK(fd >= 0);
	close(fd);
	free(old);
	free(fresh);
	printf("  unlink + new file at the path: never the old cache: ok\n");
}

static void wait_injected(struct wtio_fault *fault, uint64_t n)
{
	uint64_t t0 = t_now_ms();

	while (wtio_fault_injected(fault) < n) {
		CHECKF(t_now_ms() - t0 < 20000, "no write-back after close");
		usleep(1000);
	}
}

static void test_eio_after_close(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 1, .error = EIO,
	};
	const size_t len = 8192;
	const char *a = t_tmpfile("keep-eio-a"), *b = t_tmpfile("keep-eio-b");
	uint8_t *da = t_malloc(len), *db = t_malloc(len);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;

	keep_config(&cfg, true);
	cfg.backend = WTIO_BACKEND_AUTO;
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	t_fill(da, len, 11, 0);
	t_fill(db, len, 12, 0);

	/* A flusher's EIO after the last close: the next handle's fsync
	 * reports it, once; the data stayed dirty and is written then. */
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	write_file(ctx, a, da, len);
	wait_injected(fault, 1);
	f = open_or_skip(ctx, a, O_RDWR);
	CHECK_EQ(wtio_fsync(f), -EIO);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(a, da, len);

	/* Nobody opens it again: wtio_ctx_destroy reports it (and writes
	 * the data, the retry succeeding). */
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	write_file(ctx, b, db, len);
	wait_injected(fault, 2);
	CHECK(t_stats(ctx).writeback_errors >= 2);
	CHECK_EQ(wtio_ctx_destroy(ctx), -EIO);
	t_check_disk_equals(b, db, len);
	wtio_fault_destroy(fault);
	free(da);
	free(db);
	printf("  EIO after close: next fsync, else wtio_ctx_destroy: ok\n");
}

static int count_fds(void)
{
	char p[64];
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++) {
		snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
		if (access(p, F_OK) == 0)
			n++;
	}
	return n;
}

static void test_cap_and_emfile(void)
{
	const size_t len = 4096;
	char dir[64], paths[NR_CAP_FILES + 1][96];
	uint8_t *data = t_malloc(len * (NR_CAP_FILES + 1));
	struct rlimit old, low;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	int dups[128], nr_dups = 0, i, base;

	CHECK_OK(getrlimit(RLIMIT_NOFILE, &old));
	base = count_fds();
	low = old;
	low.rlim_cur = 64;
	if (base > 24)
		t_skip("%d descriptors open already", base);
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
	snprintf(dir, sizeof(dir), "wtio-keep-cap.%d", (int)getpid());
	CHECK_OK(mkdir(dir, 0700));
	keep_config(&cfg, false);
	ctx = t_ctx_create_or_skip(&cfg);
	/* 100 files into a cap of 32: the oldest leave, written back. */
	for (i = 0; i < NR_CAP_FILES; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
		t_fill(data + (size_t)i * len, len, 500 + (uint64_t)i, 0);
		write_file(ctx, paths[i], data + (size_t)i * len, len);
	}
	CHECKF(count_fds() <= base + 32 + 8, "%d descriptors", count_fds());
	t_check_disk_equals(paths[0], data, len);
	/* Every descriptor taken: the open evicts the oldest kept file. */
	while (nr_dups < 128) {
		int fd = dup(0);

		if (fd < 0) {
			CHECK(errno == EMFILE);
			break;
		}
		dups[nr_dups++] = fd;
	}
	CHECK(nr_dups < 128);
	snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
	t_fill(data + (size_t)i * len, len, 500 + (uint64_t)i, 0);
	write_file(ctx, paths[i], data + (size_t)i * len, len);
	while (nr_dups)
		close(dups[--nr_dups]);
	CHECK_OK(wtio_ctx_destroy(ctx));
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &old));
	for (i = 0; i <= NR_CAP_FILES; i++) {
		t_check_disk_equals(paths[i], data + (size_t)i * len, len);
		unlink(paths[i]);
	}
	rmdir(dir);
	free(data);
	printf("  at most half the descriptor limit kept; EMFILE evicts: ok\n");
}

/*
 * Past the cap, a kept file whose data a failed write-back gave back is
 * not the one evicted while others can go: its eviction would try once
 * more and then lose it (here the fault outlasts that try). A reopen
 * finds the data, and its fsync writes it.
 */
#define FAILED_AT 65536

static void test_cap_spares_failed(void)
{
	struct wtio_fault *fault = wtio_fault_create();
	/* The failed file's data lies at 64 KiB, the others' at 0: the
	 * rule hits the failed file only. */
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 2, .error = EIO,
		.start = FAILED_AT, .end = FAILED_AT + 20000,
	};
	static char paths[40][96];
	char dir[64];
	const size_t len = 20000;
	uint8_t *data = t_malloc(len * 40), *failed = t_malloc(FAILED_AT + len);
	struct rlimit old, low;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	int i;

	CHECK_OK(getrlimit(RLIMIT_NOFILE, &old));
	if (count_fds() > 12)
		t_skip("%d descriptors open already", count_fds());
	low = old;
	low.rlim_cur = 64;		/* a cap of 32 kept files */
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
	snprintf(dir, sizeof(dir), "wtio-keep-failed.%d", (int)getpid());
	CHECK_OK(mkdir(dir, 0700));
	keep_config(&cfg, false);	/* no flusher writes within the test */
	cfg.backend = WTIO_BACKEND_AUTO;
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	for (i = 0; i < 40; i++)
		snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
	t_fill(data, len * 40, 77, 0);
	f = open_or_skip(ctx, paths[0], O_RDWR | O_CREAT | O_TRUNC);
	memset(failed, 0, FAILED_AT);
	memcpy(failed + FAILED_AT, data, len);
	CHECK_EQ(wtio_pwrite(f, data, len, FAILED_AT, 0), (long long)len);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	CHECK_EQ(wtio_fsync(f), -EIO);	/* seen: close reports nothing */
	CHECK_OK(wtio_close(f));
	/* 39 more, each dirty when closed: 8 evictions past the cap. */
	for (i = 1; i < 40; i++)
		write_file(ctx, paths[i], data + (size_t)i * len, len);
	CHECKF(wtio_fault_injected(fault) == 1,
	       "the failed file was evicted: %llu faults",
	       (unsigned long long)wtio_fault_injected(fault));
	wtio_fault_clear_rules(fault);
	f = open_or_skip(ctx, paths[0], O_RDWR);
	t_check_wtio_range(f, failed, FAILED_AT + len, 0, FAILED_AT + len);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &old));
	t_check_disk_equals(paths[0], failed, FAILED_AT + len);
	for (i = 0; i < 40; i++) {
		if (i)
			t_check_disk_equals(paths[i], data + (size_t)i * len,
					    len);
		unlink(paths[i]);
	}
	rmdir(dir);
	wtio_fault_destroy(fault);
	free(data);
	free(failed);
	printf("  past the cap, a file with failed data is not the one evicted: ok\n");
}

/*
 * From 7/8 of the cap on, each 64 closes ask the flushers for 64 inodes:
 * the oldest kept files are clean by the time a close evicts them, so
 * that close makes no I/O. Before, each ask wrote one inode, and the
 * closes past the cap wrote the rest back themselves, one at a time.
 */
static void test_written_ahead(void)
{
	const size_t len = 4096;
	const int cap = 512, first_ask = cap * 7 / 8, nr = first_ask + 32;
	char dir[64], (*paths)[96] = t_malloc(sizeof(*paths) * (size_t)nr);
	uint8_t *data = t_malloc(len * (size_t)nr);
	struct rlimit old, low;
	struct wtio_config cfg;
	struct wtio_stats st;
	struct wtio_ctx *ctx;
	int i, tries, base;

	CHECK_OK(getrlimit(RLIMIT_NOFILE, &old));
	base = count_fds();
	if (old.rlim_max < (rlim_t)cap * 2)
		t_skip("RLIMIT_NOFILE hard limit %llu under %d",
		       (unsigned long long)old.rlim_max, cap * 2);
	if (base > 24)
		t_skip("%d descriptors open already", base);
	low = old;
	low.rlim_cur = (rlim_t)cap * 2;
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &low));
	snprintf(dir, sizeof(dir), "wtio-keep-ahead.%d", (int)getpid());
	CHECK_OK(mkdir(dir, 0700));
	keep_config(&cfg, false);
	cfg.cache_size = 4096ull * 16384;
	cfg.dirty_expire_ms = 600000;
	cfg.writeback_interval_ms = 600000;
	ctx = t_ctx_create_or_skip(&cfg);
	for (i = 0; i < nr; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
		t_fill(data + (size_t)i * len, len, 900 + (uint64_t)i, 0);
		write_file(ctx, paths[i], data + (size_t)i * len, len);
	}
	/* One ask, at the 448th close: 64 inodes, none of them expired,
	 * 3% of the cache dirty (under the background threshold). */
	for (tries = 0; tries < 1000; tries++) {
		CHECK_OK(wtio_stats(ctx, &st));
		/* Counted at submission: wait for the disk too. */
		if (st.write_ios >= 64 && !st.writeback_folios &&
		    st.bytes_written >= 64 * len)
			break;
		usleep(10000);
	}
	CHECKF(st.write_ios >= 64 && st.write_ios <= 64 + 8,
	       "%llu write I/Os after one ask for 64 inodes",
	       (unsigned long long)st.write_ios);
	for (i = 0; i < 64; i++)
		t_check_disk_equals(paths[i], data + (size_t)i * len, len);
	CHECK_OK(wtio_ctx_destroy(ctx));
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &old));
	for (i = 0; i < nr; i++) {
		t_check_disk_equals(paths[i], data + (size_t)i * len, len);
		unlink(paths[i]);
	}
	rmdir(dir);
	free(data);
	free(paths);
	printf("  near the cap, closed files are written back ahead: ok\n");
}

int main(void)
{
	t_require_odirect();
	test_reopen();
	test_flusher_settles();
	test_unlink_recreate();
	test_eio_after_close();
	test_cap_and_emfile();
	test_cap_spares_failed();
	test_written_ahead();
	printf("keep_closed: PASS\n");
	return T_EXIT_PASS;
}
