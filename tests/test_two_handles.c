/* SPDX-License-Identifier: MIT */
/*
 * test_two_handles.c - two wtio_open()s of one file in one context share
 * one cache: a write through one handle is read through the other at
 * once, without fsync, and nothing was read from disk for it; size and
 * truncation are shared; a third open by another name (hard link) is the
 * same file too. A second context has its own cache.
 *
 * Errors reach handles as Linux's errseq reports them: once to each
 * handle open when the error happened, also to a handle opened later
 * while no handle has reported it yet, and not to one opened after some
 * handle has.
 */
#include "helpers.h"
#include "t_fault.h"

static struct wtio_file *open_rw(struct wtio_ctx *ctx, const char *path)
{
	return t_open(ctx, path, O_RDWR);
}

/* A write-back write whose write-back fails with EIO, started by
 * sync_range WRITE alone, which (as sync_file_range without a WAIT flag)
 * reports no error to any handle: nobody has seen it afterwards. */
static void fail_writeback(struct wtio_fault *fault, struct wtio_file *f)
{
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .count = 1,
				     .error = EIO };
	uint64_t before = wtio_fault_injected(fault);
	/* A folio of its own each time: started writeback leaves a folio
	 * whose write failed to fsync, so it would not retry an old one. */
	static off_t next;
	uint8_t buf[4096];
	int ret, i;

	memset(buf, 0x33, sizeof(buf));
	CHECK_EQ(wtio_pwrite(f, buf, sizeof(buf), next, 0), sizeof(buf));
	next += sizeof(buf);
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	ret = wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WRITE);
	CHECKF(ret == 0 || ret == -EIO, "sync_range WRITE: %d", ret);
	for (i = 0; i < 5000 && wtio_fault_injected(fault) == before; i++)
		usleep(1000);
	CHECK(wtio_fault_injected(fault) == before + 1);
	wtio_fault_clear_rules(fault);
}

/* sync_range with WAIT_AFTER reports the error it waited for and, as
 * Linux's file_fdatawait_range, marks it seen by that handle only. */
static void sync_range_sees(const char *path)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule r = { .ops = WTIO_FAULT_WRITE, .count = 1,
				     .error = EIO };
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *a, *b, *c;
	uint8_t buf[4096];

	CHECK(fault);
	t_fault_config(&cfg, 4096, 256);
	ctx = t_fault_ctx_create(&cfg, fault);
	a = open_rw(ctx, path);
	b = open_rw(ctx, path);
	memset(buf, 0x44, sizeof(buf));
	CHECK_EQ(wtio_pwrite(a, buf, sizeof(buf), 0, 0), sizeof(buf));
	CHECK_OK(wtio_fault_add_rule(fault, &r));
	CHECK_EQ(wtio_sync_range(a, 0, 0, WTIO_SYNC_RANGE_WRITE |
				 WTIO_SYNC_RANGE_WAIT_AFTER), -EIO);
	wtio_fault_clear_rules(fault);
	/* Linux: -EIO, then fsync(a) 0, fsync(b) -EIO, a later opener 0. */
	CHECK_EQ(wtio_fsync(a), 0);
	c = open_rw(ctx, path);
	CHECK_EQ(wtio_fsync(b), -EIO);
	CHECK_EQ(wtio_fsync(c), 0);
	CHECK_OK(wtio_close(a));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_close(c));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	printf("errseq: sync_range WAIT_AFTER reports the error once, to its "
	       "handle only\n");
}

static void errseq_part(const char *path)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *a, *b, *c, *d, *e;

	CHECK(fault);
	t_fault_config(&cfg, 4096, 256);
	ctx = t_fault_ctx_create(&cfg, fault);
	a = open_rw(ctx, path);
	fail_writeback(fault, a);
	/* Nobody has seen it: a handle opened now reports it. */
	b = open_rw(ctx, path);
	CHECKF(wtio_fsync(b) == -EIO, "handle opened after an unseen error: "
	       "fsync did not report it");
	CHECK_EQ(wtio_fsync(b), 0);
	/* b saw it: a later opener does not; a (open before) still does. */
	c = open_rw(ctx, path);
	CHECK_EQ(wtio_fsync(c), 0);
	CHECK_EQ(wtio_fsync(a), -EIO);
	CHECK_EQ(wtio_fsync(a), 0);
	printf("errseq: unseen error reported to a later opener; once seen, "
	       "not to new ones\n");

	/* Two errors before anyone looks: reported once per handle. */
	fail_writeback(fault, a);
	fail_writeback(fault, c);
	d = open_rw(ctx, path);
	CHECK_EQ(wtio_fsync(d), -EIO);
	CHECK_EQ(wtio_fsync(d), 0);
	CHECK_EQ(wtio_fsync(c), -EIO);
	CHECK_EQ(wtio_fsync(c), 0);
	e = open_rw(ctx, path);
	CHECK_EQ(wtio_fsync(e), 0);
	/* a and b were open for both: one report each, at close. */
	CHECK_EQ(wtio_close(a), -EIO);
	CHECK_EQ(wtio_close(b), -EIO);
	CHECK_OK(wtio_close(c));
	CHECK_OK(wtio_close(d));
	CHECK_OK(wtio_close(e));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	printf("errseq: two unseen errors, one report per handle\n");
}

int main(void)
{
	struct wtio_ctx *ctx;
	struct wtio_file *a, *b, *c;
	const char *path, *link_path;
	uint8_t data[70000], buf[70000];
	struct wtio_stats st0, st1;
	int i;

	t_require_odirect();
	ctx = t_ctx(4096, 256, WTIO_BACKEND_AUTO);
	path = t_tmpfile("two_handles");
	link_path = t_tmpfile("two_handles_link");
	unlink(link_path);
	CHECK_OK(link(path, link_path));

	a = t_open(ctx, path, O_RDWR);
	b = t_open(ctx, path, O_RDONLY);
	c = t_open(ctx, link_path, O_RDWR);
	for (i = 0; i < 20; i++) {
		size_t len = 1 + (size_t)i * 3001;
		off_t off = (off_t)i * 977;
		struct wtio_file *w = (i & 1) ? c : a;

		t_fill(data, len, 40 + (uint64_t)i, (uint64_t)off);
		CHECK_EQ(wtio_pwrite(w, data, len, off, 0), (long long)len);
		CHECK_OK(wtio_stats(ctx, &st0));
		memset(buf, 0, len);
		CHECK_EQ(wtio_pread(b, buf, len, off, 0), (long long)len);
		CHECK(memcmp(buf, data, len) == 0);
		CHECK_EQ(wtio_pread((i & 1) ? a : c, buf, len, off, 0),
			 (long long)len);
		CHECK(memcmp(buf, data, len) == 0);
		CHECK_OK(wtio_stats(ctx, &st1));
		/* Served from the shared cache, not from disk. */
		CHECK_EQ(st1.read_ios, st0.read_ios);
		CHECK_EQ(wtio_file_size(b), wtio_file_size(w));
	}
	/* Size changes are shared. */
	CHECK_OK(wtio_ftruncate(a, 12345));
	CHECK_EQ(wtio_file_size(b), 12345);
	CHECK_EQ(wtio_file_size(c), 12345);
	CHECK_EQ(wtio_pread(b, buf, sizeof(buf), 0, 0), 12345);

	/* Dirty data written through c is on disk after a's fsync (one
	 * cache, one inode). */
	t_fill(data, 5000, 99, 100);
	CHECK_EQ(wtio_pwrite(c, data, 5000, 100, 0), 5000);
	CHECK_OK(wtio_fsync(a));
	{
		size_t dlen;
		uint8_t *d = t_read_disk(path, &dlen);

		CHECK_EQ(dlen, 12345);
		CHECK(memcmp(d + 100, data, 5000) == 0);
		free(d);
	}
	/* Closing one handle leaves the others working. */
	CHECK_OK(wtio_close(a));
	CHECK_EQ(wtio_pread(b, buf, 5000, 100, 0), 5000);
	CHECK(memcmp(buf, data, 5000) == 0);
	CHECK_OK(wtio_close(c));
	CHECK_EQ(wtio_pread(b, buf, 5000, 100, 0), 5000);
	CHECK(memcmp(buf, data, 5000) == 0);
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_ctx_destroy(ctx));
	errseq_part(path);
	sync_range_sees(path);
	unlink(link_path);
	printf("two_handles: 20 cross-handle writes read back from the shared cache: PASS\n");
	return T_EXIT_PASS;
}
