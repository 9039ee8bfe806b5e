/* SPDX-License-Identifier: MIT */
/*
 * test_fsx_regress.c - regressions found by wtio-fsx.
 *
 * 1. A read miss on a block that straddles the backing file's end, while
 *    i_size is larger (dirty write-back data past it is only cached): the
 *    direct read comes back short off an alignment boundary, and the retry
 *    from there was an unaligned direct read (-EINVAL from pread).
 *    (wtio-fsx -S 3 -N 3000, op 2130.)
 * 2. wtio_close() fixed the backing file's size while a flusher's
 *    writeback was still in flight; its completion then left the file a
 *    block tail longer than wtio's size.
 *    (wtio-fsx -S 18 -f 64k -l 512k -o 128k, op 18, timing-dependent
 *    there; here a hold rule keeps that writeback in flight.)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "helpers.h"
#include "t_fault.h"

/*
 * The race, made deterministic: a read miss comes back short at the
 * backing file's (unaligned) end; while the rest is being read (the
 * second read I/O is held by a fault hold rule), the backing file grows,
 * as when a flusher writes a block past it; then the read goes on. The
 * rest must be read from an aligned offset.
 */
static const char *grow_path;
static struct wtio_fault *grow_fault;

static void *grow_backing(void *arg)
{
	int fd;

	(void)arg;
	/* The second read I/O is issued and held: grow under it. */
	CHECKF(wtio_fault_wait_held(grow_fault, 1, 30000) == 0,
	       "the second read I/O never came");
	fd = open(grow_path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_OK(ftruncate(fd, 8192));
	close(fd);
	wtio_fault_release(grow_fault);
	return NULL;
}

static void read_while_disk_grows(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	struct wtio_fault_rule slow = { .ops = WTIO_FAULT_READ, .skip = 1,
					.count = 1, .hold = 1 };
	const char *path = t_tmpfile("rg-grow");
	uint8_t *want = t_zalloc(3 * 65536);
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	pthread_t th;
	int fd;

	CHECK(fault);
	t_fill(want, 5000, 1, 0);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, want, 5000, 0), 5000);
	close(fd);
	ctx = t_fault_ctx(fault, fs, 64);
	f = t_open(ctx, path, O_RDWR);
	/* i_size well past the disk's end, with cached data there. */
	t_fill(want + 2 * 65536, 1000, 2, 2 * 65536);
	CHECK_EQ(wtio_pwrite(f, want + 2 * 65536, 1000, 2 * 65536, 0), 1000);
	CHECK_OK(wtio_fault_add_rule(fault, &slow));
	grow_path = path;
	grow_fault = fault;
	CHECK_OK(pthread_create(&th, NULL, grow_backing, NULL));
	t_check_wtio_range(f, want, 2 * 65536 + 1000, 0, 8192);
	CHECK_OK(pthread_join(th, NULL));
	CHECK_EQ(wtio_fault_injected(fault), 1);
	wtio_fault_clear_rules(fault);
	t_check_wtio_range(f, want, 2 * 65536 + 1000, 0, 2 * 65536 + 1000);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, want, 2 * 65536 + 1000);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(want);
}

/* A read over the disk's (unaligned) end while i_size is larger. */
static void read_over_disk_eof(uint32_t fs)
{
	struct wtio_ctx *ctx = t_ctx(fs, 64, WTIO_BACKEND_AUTO);
	const char *path = t_tmpfile("rg-eof");
	uint8_t *want = t_zalloc(3 * 65536);
	struct wtio_file *f;
	int fd;

	t_fill(want, 5000, 1, 0);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, want, 5000, 0), 5000);
	close(fd);
	f = t_open(ctx, path, O_RDWR);
	t_fill(want + 2 * 65536, 1000, 2, 2 * 65536);
	CHECK_EQ(wtio_pwrite(f, want + 2 * 65536, 1000, 2 * 65536, 0), 1000);
	t_check_wtio_range(f, want, 2 * 65536 + 1000, 0, 2 * 65536 + 1000);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, want, 2 * 65536 + 1000);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(want);
}

/*
 * Close while a flusher's writeback of an extending, unaligned write is
 * in flight: the backing size must end equal to wtio's. Made explicit: a
 * hold rule keeps the write I/O of the tail block in the flusher; the
 * test waits until it is held, then closes; a helper releases it only
 * once the closing thread is blocked inside wtio_close (its state in
 * /proc is 'S'), so close certainly ran while the I/O was in flight
 * (counted), and close must not return before the release.
 */
static struct {
	struct wtio_fault *fault;
	pid_t closer;			/* the thread calling wtio_close */
	atomic_int closing, released, saw_blocked;
} cl;

static void *release_when_close_blocks(void *arg)
{
	int i;

	(void)arg;
	while (!atomic_load(&cl.closing))
		usleep(100);
	for (i = 0; i < 20000; i++) {	/* up to ~4 s, then fail */
		if (t_task_state((int)cl.closer) == 'S') {
			atomic_store(&cl.saw_blocked, 1);
			break;
		}
		usleep(200);
	}
	atomic_store(&cl.released, 1);
	wtio_fault_release(cl.fault);
	return NULL;
}

static void close_with_flusher_io(uint32_t fs)
{
	struct wtio_fault *fault = wtio_fault_create();
	const char *path = t_tmpfile("rg-close");
	size_t len = (size_t)fs * 24 + 1000;	/* over the background ratio */
	struct wtio_fault_rule hold = { .ops = WTIO_FAULT_WRITE, .count = 1,
					.start = (off_t)len - 1,
					.end = (off_t)len, .hold = 1 };
	uint8_t *buf = t_malloc(len);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	pthread_t th;
	int i;

	CHECK(fault);
	t_fault_config(&cfg, fs, 64);
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	/* The writer must not be throttled on the held I/O; the flusher
	 * still starts at 10%. */
	cfg.dirty_ratio = 90;
	ctx = t_fault_ctx_create(&cfg, fault);
	cl.fault = fault;
	cl.closer = (pid_t)syscall(SYS_gettid);
	for (i = 0; i < 3; i++) {
		atomic_store(&cl.closing, 0);
		atomic_store(&cl.released, 0);
		atomic_store(&cl.saw_blocked, 0);
		wtio_fault_clear_rules(fault);
		CHECK_OK(wtio_fault_add_rule(fault, &hold));
		f = t_open(ctx, path, O_RDWR | O_TRUNC);
		t_fill(buf, len, 3 + (uint64_t)i, 0);
		CHECK_EQ(wtio_pwrite(f, buf, len, 0, 0), (long long)len);
		CHECKF(wtio_fault_wait_held(fault, 1, 30000) == 0,
		       "folio %u: the flusher never wrote the tail block", fs);
		CHECK_OK(pthread_create(&th, NULL, release_when_close_blocks,
					NULL));
		atomic_store(&cl.closing, 1);
		CHECK_OK(wtio_close(f));
		CHECKF(atomic_load(&cl.released), "folio %u: close returned "
		       "with the flusher's write still in flight", fs);
		CHECK_OK(pthread_join(th, NULL));
		CHECKF(atomic_load(&cl.saw_blocked), "folio %u: close never "
		       "waited while the flusher's write was held", fs);
		CHECKF(t_disk_size(path) == (off_t)len, "disk size %lld after "
		       "close, wtio's size %zu", (long long)t_disk_size(path), len);
		t_check_disk_equals(path, buf, len);
	}
	printf("  folio %u: 3 closes, each blocked while the flusher's write of "
	       "the tail was held\n", fs);
	CHECK_OK(wtio_ctx_destroy(ctx));
	wtio_fault_destroy(fault);
	free(buf);
}

int main(void)
{
	t_require_odirect();
	t_watchdog(120, "FAIL: fsx_regress hung (watchdog)\n");
	read_while_disk_grows(4096);
	read_while_disk_grows(65536);
	read_over_disk_eof(4096);
	read_over_disk_eof(65536);
	close_with_flusher_io(4096);
	close_with_flusher_io(65536);
	printf("fsx_regress: PASS\n");
	return T_EXIT_PASS;
}
