/* SPDX-License-Identifier: MIT */
/*
 * test_eviction.c - a working set ten times the cache budget: random
 * writes and reads, every byte read verified against a shadow, and the
 * budget checked without trusting the cache's own counters:
 *
 *  - on the fault backend, every buffer any read or write I/O moved lies
 *    within one window of budget x folio size bytes (the trace records
 *    each I/O's memory): the cache never used more memory than its budget;
 *  - a second read of the whole working set (backwards), after fsync,
 *    reads at least (working set - budget) bytes from disk (counted by the
 *    fault backend's trace; on AUTO by wtio_stats bytes_read): the cache
 *    cannot be holding more than its budget.
 *
 * A cache keeping more than its budget (while its stats still say the
 * budget) fails both.
 */
#include "helpers.h"
#include "t_fault.h"

static uint64_t ops, bytes;

/* Bytes the READ I/Os of the trace from `from` on moved; lo and hi widen to
 * cover every READ and WRITE buffer. */
static uint64_t trace_scan(struct wtio_fault *fault, uint64_t from,
			   uint64_t *lo, uint64_t *hi)
{
	uint64_t i, n = wtio_fault_nr_ios(fault), rd = 0;
	struct wtio_fault_io io;

	for (i = from; i < n; i++) {
		CHECK_OK(wtio_fault_get_io(fault, i, &io));
		if (io.op == WTIO_FAULT_FLUSH)
			continue;
		if (io.op == WTIO_FAULT_READ)
			rd += io.len;
		if (io.buf_lo < *lo)
			*lo = io.buf_lo;
		if (io.buf_hi > *hi)
			*hi = io.buf_hi;
	}
	return rd;
}

static void run(uint32_t fs, uint64_t budget, uint64_t seed, bool fault_be)
{
	size_t ws = (size_t)fs * budget * 10, mem = (size_t)fs * budget;
	uint8_t *shadow = t_zalloc(ws);
	uint8_t *buf = t_malloc(4 * (size_t)fs);
	struct wtio_fault *fault = fault_be ? wtio_fault_create() : NULL;
	struct wtio_ctx *ctx;
	const char *path = t_tmpfile("eviction");
	struct wtio_file *f;
	struct t_rng r = { seed };
	struct wtio_stats st, a;
	uint64_t lo = UINT64_MAX, hi = 0, from, disk_rd;
	size_t size = 0;
	int i;

	if (fault_be) {
		CHECK(fault);
		ctx = t_fault_ctx(fault, fs, budget);
	} else {
		ctx = t_ctx(fs, budget, WTIO_BACKEND_AUTO);
	}
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	/* Fill the whole working set first. */
	for (size_t off = 0; off < ws; off += 3 * fs) {
		size_t len = ws - off < 3 * (size_t)fs ? ws - off : 3 * (size_t)fs;

		t_fill(buf, len, seed, off);
		CHECK_EQ(wtio_pwrite(f, buf, len, (off_t)off, 0), (long long)len);
		memcpy(shadow + off, buf, len);
	}
	size = ws;
	for (i = 0; i < 3000; i++) {
		size_t len = 1 + t_rand_below(&r, 3 * fs);
		off_t off = (off_t)t_rand_below(&r, ws - len);

		if (t_rand_below(&r, 2)) {
			t_fill(buf, len, seed + (uint64_t)i, (uint64_t)off);
			CHECK_EQ(wtio_pwrite(f, buf, len, off, 0), (long long)len);
			memcpy(shadow + off, buf, len);
		} else {
			t_check_wtio_range(f, shadow, size, off, len);
			bytes += len;
		}
		ops++;
	}
	t_check_wtio_range(f, shadow, size, 0, size);
	bytes += size;

	/*
	 * Clean cache, then the whole working set again, backwards, one
	 * folio at a time: each folio is read once, so only what was cached
	 * when the pass began (at most a budget's worth) can be served
	 * without reading the disk; anything brought in during the pass was
	 * read. Backwards, because right after the forward read above a
	 * cache holding more than its budget holds the end of the file.
	 */
	CHECK_OK(wtio_fsync(f));
	a = t_stats(ctx);
	from = fault ? wtio_fault_nr_ios(fault) : 0;
	for (size_t off = ws; off > 0; off -= fs)
		t_check_wtio_range(f, shadow, size, (off_t)(off - fs), fs);
	bytes += ws;
	CHECK_OK(wtio_stats(ctx, &st));
	if (fault) {
		disk_rd = trace_scan(fault, from, &lo, &hi);
		(void)trace_scan(fault, 0, &lo, &hi);
		CHECKF(hi - lo <= mem, "I/O buffers span %llu bytes, the budget "
		       "is %zu", (unsigned long long)(hi - lo), mem);
	} else {
		disk_rd = st.bytes_read - a.bytes_read;
	}
	CHECKF(disk_rd >= ws - mem, "re-reading %zu bytes read only %llu from "
	       "disk: more than the budget (%zu) was cached", ws,
	       (unsigned long long)disk_rd, mem);
	CHECKF(st.evictions > 0, "no evictions with a working set 10x the budget");
	CHECK(st.total_folios == budget);
	CHECK(st.misses > 0);
	printf("  %s folio %u budget %llu ws %zu: re-read %zu bytes, %llu from "
	       "disk (>= %zu)%s%s; evictions %llu misses %llu hits %llu\n",
	       wtio_ctx_backend_name(ctx), fs, (unsigned long long)budget, ws,
	       ws, (unsigned long long)disk_rd, ws - mem,
	       fault ? ", I/O buffers within " : "",
	       fault ? "the budget's memory" : "",
	       (unsigned long long)st.evictions, (unsigned long long)st.misses,
	       (unsigned long long)st.hits);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	unlink(path);
	free(shadow);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	run(4096, 32, 1, true);
	run(16384, 32, 2, true);
	run(65536, 16, 3, true);
	run(4096, 32, 4, false);
	printf("eviction: %llu ops, %llu bytes verified: PASS\n",
	       (unsigned long long)ops, (unsigned long long)bytes);
	return T_EXIT_PASS;
}
