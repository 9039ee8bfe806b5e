/* SPDX-License-Identifier: MIT */
/*
 * test_enospc_drop.c - a cache full of dirty data whose write-back failed
 * (ENOSPC or EIO, injected on every write I/O) does not fail reads of
 * another file, nor the writer itself: once nothing else can free a
 * folio, that data is given up (as Linux does), its error stays recorded
 * and every handle's fsync or close reports it once. Before, the folios
 * stayed pinned until fsync and the next allocation - a read of a file
 * with no error of its own - failed with EIO.
 */
#include "helpers.h"
#include "t_fault.h"

static void test_drop(uint32_t fs, int error)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule rule = {
		.ops = WTIO_FAULT_WRITE, .count = 0, .error = error,
	};
	const uint64_t nr_folios = 64;
	const size_t blen = 512 * 1024;
	const size_t alen = 4 * nr_folios * fs;	/* 4 times the cache */
	const char *apath = t_tmpfile("drop-a");
	const char *bpath = t_tmpfile("drop-b");
	uint8_t *bdata = t_malloc(blen), *buf = t_malloc(blen);
	uint8_t *adata = t_malloc(alen);
	struct wtio_ctx *ctx;
	struct wtio_file *a, *a2, *b;
	struct wtio_stats st;
	size_t done = 0;
	ssize_t n;

	t_fill(bdata, blen, 11, 0);
	t_write_disk(bpath, bdata, blen);
	t_fill(adata, alen, 12, 0);

	ctx = t_fault_ctx(fault, fs, nr_folios);
	a = t_open(ctx, apath, O_RDWR | O_CREAT | O_TRUNC);
	a2 = t_open(ctx, apath, O_RDWR);	/* sees the error on its own */
	b = t_open(ctx, bpath, O_RDONLY);
	CHECK_OK(wtio_fault_add_rule(fault, &rule));

	/* Every write-back of a fails: its dirty folios end up as all the
	 * cache holds. The writer goes on being accepted (as write() after
	 * a write-back error is), in pieces, interleaved with reads of b. */
	while (done < alen) {
		size_t chunk = alen - done < 4 * fs ? alen - done : 4 * fs;

		n = wtio_pwrite(a, adata + done, chunk, (off_t)done, 0);
		CHECKF(n > 0, "write of a at %zu: %zd (%s)", done, n,
		       n < 0 ? strerror((int)-n) : "short");
		done += (size_t)n;
		n = wtio_pread(b, buf, fs, (off_t)(done % (blen - fs)), 0);
		CHECKF(n == (ssize_t)fs, "read of b at %zu while a fails: %zd (%s)",
		       done % (blen - fs), n, n < 0 ? strerror((int)-n) : "short");
		CHECK(memcmp(buf, bdata + done % (blen - fs), fs) == 0);
	}
	CHECK(wtio_fault_injected(fault) >= 1);
	/* Given up, and counted: nothing else could free a folio. */
	CHECK_OK(wtio_stats(ctx, &st));
	CHECKF(st.failed_dropped_folios >= 2 * nr_folios,
	       "failed data given up: %llu folios counted",
	       (unsigned long long)st.failed_dropped_folios);
	/* The whole of b, through a cache that a's failed data had filled. */
	n = wtio_pread(b, buf, blen, 0, 0);
	CHECKF(n == (ssize_t)blen, "read of b: %zd (%s)", n,
	       n < 0 ? strerror((int)-n) : "short");
	CHECK(memcmp(buf, bdata, blen) == 0);
	/* Nothing false: each handle of a hears of the failure, once. */
	CHECK_EQ(wtio_fsync(a), -error);
	wtio_fault_clear_rules(fault);
	CHECK_OK(wtio_fsync(a));
	CHECK_EQ(wtio_close(a2), -error);
	CHECK_OK(wtio_close(a));
	CHECK_OK(wtio_close(b));
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(adata);
	free(bdata);
	free(buf);
	printf("  folio %u, %s on every write-back: reads of another file and the writer go on, error reported: ok\n",
	       fs, strerror(error));
}

int main(void)
{
	t_require_odirect();
	t_watchdog(120, "enospc_drop hung");
	test_drop(4096, ENOSPC);
	test_drop(4096, EIO);
	test_drop(65536, ENOSPC);
	printf("enospc_drop: PASS\n");
	return T_EXIT_PASS;
}
