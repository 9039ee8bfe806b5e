/* SPDX-License-Identifier: MIT */
/*
 * test_eio_writeback.c - write-back I/O errors reach the caller: an EIO on
 * the first write I/O makes fsync return -EIO exactly once, the data stays
 * dirty and the next fsync writes it (returns 0, data on disk); a second
 * handle opened before the error sees it once on its own fsync; closing a
 * handle with an unreported error returns it; a last close whose own
 * write-back fails returns it and keeps the data cached, for a reopen
 * to read and write. An EIO on a read I/O fails
 * pread with -EIO, and a later pread returns the right data.
 * Data written after a reported EIO into the failed block is never lost
 * without a report: when the cache, full, gives failed data up, the next
 * fsync says so (or the data is on disk). Nor is a write-back write's
 * block that a write-through write's out-of-space I/O carried along.
 */
#include "helpers.h"
#include "t_fault.h"

static void test_write_eio(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 1, .error = EIO,
	};
	struct wtio_ctx *ctx = t_fault_ctx(fault, fs, 256);
	const char *path = t_tmpfile("eio");
	const size_t len = 200000;
	uint8_t *data = t_malloc(len);
	struct wtio_file *a, *b, *c;
	struct wtio_stats st;

	a = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	b = t_open(ctx, path, O_RDWR);	/* opened before the error */
	c = t_open(ctx, path, O_RDWR);	/* closed with the error unseen */
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	t_fill(data, len, 7, 0);
	CHECK_EQ(wtio_pwrite(a, data, len, 0, 0), (long long)len);
	CHECK_EQ(wtio_fsync(a), -EIO);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK(st.writeback_errors >= 1);
	/* Reported once; the folio stayed dirty and is written now. */
	CHECK_OK(wtio_fsync(a));
	CHECK_OK(wtio_fsync(a));
	t_check_disk_equals(path, data, len);
	/* The cache still serves the data. */
	t_check_wtio_range(a, data, len, 0, len);
	/* The other handles each see the error once. */
	CHECK_EQ(wtio_fsync(b), -EIO);
	CHECK_OK(wtio_fsync(b));
	CHECK_EQ(wtio_close(c), -EIO);
	CHECK_OK(wtio_close(b));
	/* A handle opened after the error does not see it. */
	c = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_fsync(c));
	CHECK_OK(wtio_close(c));

	/* A flusher's error (no fsync involved) is reported at close. */
	rule.count = 1;
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	CHECK_EQ(wtio_pwrite(a, data, 5000, 3, 0), 5000);
	{
		/* WRITE alone reports nothing to the handle's errseq (a
		 * WAIT flag would, as Linux's sync_file_range does). */
		int ret = wtio_sync_range(a, 0, 0, WTIO_SYNC_RANGE_WRITE);

		CHECKF(ret == 0 || ret == -EIO, "sync_range: %d", ret);
		for (int i = 0; i < 5000 && wtio_fault_injected(fault) < 2; i++)
			usleep(1000);
	}
	CHECK_EQ(wtio_fault_injected(fault), 2);
	{
		uint8_t *shadow = t_malloc(len);

		memcpy(shadow, data, len);
		memcpy(shadow + 3, data, 5000);
		CHECK_EQ(wtio_close(a), -EIO);
		/* close retried the kept-dirty data: it is on disk */
		t_check_disk_equals(path, shadow, len);
		free(shadow);
	}
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(data);
	unlink(path);
	printf("  folio %u: write EIO reported once per handle, data retried: ok\n", fs);
}

/*
 * The last close's own write-back fails: close reports it, and the data
 * stays in the cache (kept, as a closed inode of WTIO_CONFIG_KEEP_CLOSED
 * is): a reopen reads it, not the zeros the disk has under a size that
 * already covers it, and its fsync writes it.
 */
static void test_last_close_eio(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 1, .error = EIO,
	};
	struct wtio_ctx *ctx = t_fault_ctx(fault, fs, 256);
	const char *path = t_tmpfile("eio-close");
	const size_t len = 61099, more = 65536 - 59911;
	uint8_t *shadow = t_malloc(len + more);
	struct wtio_file *f;

	t_fill(shadow, len + more, 9, 0);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_EQ(wtio_pwrite(f, shadow, len, 0, 0), (long long)len);
	CHECK_OK(wtio_fsync(f));
	/* The write the review's exerciser lost: it extends the file. */
	CHECK_EQ(wtio_pwrite(f, shadow + 59911, more, 59911, 0),
		 (long long)more);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	CHECK_EQ(wtio_close(f), -EIO);
	CHECK_EQ(wtio_fault_injected(fault), 1);
	f = t_open(ctx, path, O_RDWR);
	CHECK_EQ(wtio_file_size(f), 59911 + (long long)more);
	t_check_wtio_range(f, shadow, 59911 + more, 0, 59911 + more);
	/* Reported once, by the close: the reopen's fsync writes it. */
	CHECK_OK(wtio_fsync(f));
	t_check_disk_equals(path, shadow, 59911 + more);
	CHECK_OK(wtio_close(f));

	/* Never reopened: the context's end writes it, and since the
	 * close reported the error, has nothing more to report. */
	f = t_open(ctx, path, O_RDWR);
	t_fill(shadow, 5000, 10, 0);
	CHECK_EQ(wtio_pwrite(f, shadow, 5000, 0, 0), 5000);
	rule.count = 1;
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	CHECK_EQ(wtio_close(f), -EIO);
	CHECK_EQ(wtio_fault_injected(fault), 2);
	CHECK_OK(wtio_ctx_destroy(ctx));
	t_check_disk_equals(path, shadow, 59911 + more);
	wtio_fault_destroy(fault);
	free(shadow);
	unlink(path);
	printf("  folio %u: last close's EIO: reported, data kept, rewritten: ok\n",
	       fs);
}

static void test_read_eio(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_READ, .count = 0, .error = EIO,
	};
	const char *path = t_tmpfile("eio-read");
	const size_t len = 300000;
	uint8_t *data = t_malloc(len), *buf = t_malloc(len);
	struct wtio_ctx *ctx;
	struct wtio_file *f;

	t_fill(data, len, 8, 0);
	t_write_disk(path, data, len);

	ctx = t_fault_ctx(fault, fs, 256);
	f = t_open(ctx, path, O_RDWR);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	CHECK_EQ(wtio_pread(f, buf, 100, 5000, 0), -EIO);
	CHECK_EQ(wtio_pread(f, buf, len, 0, 0), -EIO);
	CHECK(wtio_fault_injected(fault) >= 2);
	/* An unaligned write into an uncached block needs a read: that
	 * read fails too, and nothing is written. */
	CHECK_EQ(wtio_pwrite(f, buf, 10, 70001, 0), -EIO);
	wtio_fault_clear_rules(fault);
	CHECK_EQ(wtio_pread(f, buf, len, 0, 0), (long long)len);
	CHECK(memcmp(buf, data, len) == 0);
	CHECK_EQ(wtio_pread(f, buf, 100, 5000, 0), 100);
	CHECK(memcmp(buf, data + 5000, 100) == 0);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, data, len);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(data);
	free(buf);
	unlink(path);
	printf("  folio %u: read EIO returned, later read correct: ok\n", fs);
}

/*
 * write A over the whole cache, its write-back fails, fsync reports it;
 * write B over the same blocks (accepted); the device still failing, a
 * read of another file needs a folio, and the cache, full of failed
 * data, gives it up. B was written after the report: its loss must be
 * reported again, or B be on disk. Before, B sat in folios still marked
 * failed, was given up without a new error, and the next fsync returned
 * 0 with the disk stale.
 */
static void test_rewrite_after_eio(uint32_t fs)
{
	const uint64_t nr = 64;
	const size_t len = (size_t)fs * nr;
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 0, .error = EIO,
	};
	const char *path = t_tmpfile("eio-rewrite");
	const char *other = t_tmpfile("eio-rewrite-other");
	uint8_t *a = t_malloc(len), *b = t_malloc(len), *buf = t_malloc(len);
	size_t dlen;
	uint8_t *disk;
	struct wtio_ctx *ctx;
	struct wtio_file *f, *g;
	ssize_t r;
	int ret;

	t_fill(buf, len, 12, 0);
	t_write_disk(other, buf, len);
	t_fill(a, len, 13, 0);
	t_fill(b, len, 14, 0);
	ctx = t_fault_ctx(fault, fs, nr);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));
	/* A, and B over it, may each be refused part way (-EIO: a cache
	 * full of data the disk refuses); what was accepted counts. */
	r = wtio_pwrite(f, a, len, 0, 0);
	CHECK(r > 0 || r == -EIO);
	CHECK_EQ(wtio_fsync(f), -EIO);
	r = wtio_pwrite(f, b, len, 0, 0);
	CHECKF(r > 0, "write B: %zd", r);
	g = t_open(ctx, other, O_RDONLY);
	CHECK_EQ(wtio_pread(g, buf, fs, 0, 0), (long long)fs);
	CHECK_OK(wtio_close(g));
	ret = wtio_fsync(f);
	wtio_fault_clear_rules(fault);
	if (ret == 0) {
		disk = t_read_disk(path, &dlen);
		CHECKF(dlen >= (size_t)r && memcmp(disk, b, (size_t)r) == 0,
		       "fsync returned 0 after the cache gave up data written "
		       "after the reported error: the disk does not have it");
		free(disk);
	} else {
		CHECKF(ret == -EIO, "fsync: %d", ret);
	}
	wtio_close(f);
	wtio_ctx_destroy(ctx);
	wtio_fault_destroy(fault);
	free(a);
	free(b);
	free(buf);
	unlink(path);
	unlink(other);
	printf("  folio %u: data written after a reported EIO, given up: "
	       "reported (fsync %d): ok\n", fs, ret);
}

/*
 * W1, a write-back write, in block 0 of a folio; W2, a write-through
 * write into block 1 of it, fails for space (its error is its own,
 * returned to it, not recorded for fsync). Its I/O carried W1's block,
 * given back dirty. Then another file's write-back fails until the
 * cache is full of failed data, which an allocation gives up. Before,
 * W1's block went back marked failed although no error was recorded
 * for it, was given up with the rest, and fsync returned 0 with W1 not
 * on disk (found by a review).
 */
static void test_carried_block_enospc(void)
{
	const uint32_t fs = 16384;
	const uint64_t nr = 64;
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule nospc = {
		.ops = WTIO_FAULT_WRITE, .error = ENOSPC,
	};
	struct wtio_fault_rule eio = { .ops = WTIO_FAULT_WRITE, .error = EIO };
	const char *fp = t_tmpfile("eio-carried"), *xp = t_tmpfile("eio-fill");
	const size_t flen = 65536, xlen = 2 * nr * fs;
	uint8_t *old = t_malloc(flen), *w1 = t_malloc(4096);
	uint8_t *w2 = t_malloc(4096), *x = t_malloc(xlen), *disk;
	struct wtio_ctx *ctx;
	struct wtio_file *f, *xf;
	size_t done, dlen;
	ssize_t r;
	int ret;

	t_fill(old, flen, 21, 0);
	t_write_disk(fp, old, flen);
	t_fill(w1, 4096, 22, 0);
	t_fill(w2, 4096, 23, 0);
	t_fill(x, xlen, 24, 0);
	ctx = t_fault_ctx(fault, fs, nr);
	f = t_open(ctx, fp, O_RDWR);
	xf = t_open(ctx, xp, O_RDWR | O_CREAT | O_TRUNC);
	CHECK_EQ(wtio_pwrite(f, w1, 4096, 0, 0), 4096);
	CHECK_OK(wtio_fault_add_rule(fault, &nospc));
	CHECK_EQ(wtio_pwrite(f, w2, 4096, 4096, WTIO_WRITETHROUGH), -ENOSPC);
	wtio_fault_clear_rules(fault);
	CHECK_OK(wtio_fault_add_rule(fault, &eio));
	for (done = 0; done < xlen; done += (size_t)r) {
		r = wtio_pwrite(xf, x + done, 4 * fs, (off_t)done, 0);
		if (r <= 0)
			break;
	}
	wtio_fault_clear_rules(fault);
	ret = wtio_fsync(f);
	if (ret == 0) {
		disk = t_read_disk(fp, &dlen);
		CHECKF(dlen == flen && memcmp(disk, w1, 4096) == 0,
		       "fsync returned 0 and the acknowledged write-back "
		       "write is not on disk");
		free(disk);
	} else {
		CHECKF(ret == -EIO, "fsync: %d", ret);
	}
	wtio_close(f);
	wtio_close(xf);
	wtio_ctx_destroy(ctx);
	wtio_fault_destroy(fault);
	free(old);
	free(w1);
	free(w2);
	free(x);
	unlink(fp);
	unlink(xp);
	printf("  a block carried by a write-through I/O out of space, "
	       "then given up: reported (fsync %d): ok\n", ret);
}

int main(void)
{
	t_require_odirect();
	test_write_eio(4096);
	test_write_eio(65536);
	test_last_close_eio(4096);
	test_last_close_eio(16384);
	test_read_eio(4096);
	test_read_eio(65536);
	test_rewrite_after_eio(4096);
	test_rewrite_after_eio(16384);
	test_carried_block_enospc();
	printf("eio_writeback: PASS\n");
	return T_EXIT_PASS;
}
