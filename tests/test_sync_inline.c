/* SPDX-License-Identifier: MIT */
/*
 * test_sync_inline: on the io_uring backend, a waited-for fsync and
 * fdatasync are the calling thread's own system calls (not an
 * IORING_OP_FSYNC, which the kernel always hands to an io-wq worker),
 * their errors reach the caller, EINTR is retried, and data written
 * before them is on disk after them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "helpers.h"
#include "sys.h"

static int (*real_fsync)(int), (*real_fdatasync)(int);
static pid_t caller;
static _Atomic int nr_fsync, nr_fdatasync, nr_foreign, inj_eio, inj_eintr;

static int inject(void)
{
	if ((pid_t)syscall(SYS_gettid) != caller)
		atomic_fetch_add(&nr_foreign, 1);
	if (atomic_exchange(&inj_eintr, 0)) {
		errno = EINTR;
		return -1;
	}
	if (atomic_exchange(&inj_eio, 0)) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int fake_fsync(int fd)
{
	atomic_fetch_add(&nr_fsync, 1);
	return inject() ? -1 : real_fsync(fd);
}

static int fake_fdatasync(int fd)
{
	atomic_fetch_add(&nr_fdatasync, 1);
	return inject() ? -1 : real_fdatasync(fd);
}

int main(void)
{
	struct wtio_sys tab = wtio_sys_tab;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	const char *path;
	uint8_t *buf;
	const size_t len = 256 * 1024;

	t_watchdog(60, "FAIL: sync_inline hung (watchdog)\n");
	t_require_odirect();
	caller = (pid_t)syscall(SYS_gettid);
	real_fsync = tab.fsync;
	real_fdatasync = tab.fdatasync;
	tab.fsync = fake_fsync;
	tab.fdatasync = fake_fdatasync;
	CHECK_OK(wtio_sys_set(&tab));

	wtio_config_init(&cfg);
	cfg.cache_size = 16u << 20;
	cfg.backend = WTIO_BACKEND_IO_URING;
	ctx = t_ctx_create_or_skip(&cfg);
	path = t_tmpfile("sync_inline");
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	buf = t_malloc(len);

	t_fill(buf, len, 7, 0);
	CHECK_EQ(wtio_pwrite(f, buf, len, 0, 0), (long long)len);
	CHECK_OK(wtio_fdatasync(f));
	CHECKF(atomic_load(&nr_fdatasync) == 1,
	       "fdatasync: %d system calls of the caller's, want 1",
	       atomic_load(&nr_fdatasync));
	t_check_disk_equals(path, buf, len);

	t_fill(buf, len, 8, 0);
	CHECK_EQ(wtio_pwrite(f, buf, len, 0, 0), (long long)len);
	atomic_store(&inj_eintr, 1);
	CHECK_OK(wtio_fsync(f));
	CHECKF(atomic_load(&nr_fsync) == 2,
	       "fsync after EINTR: %d system calls, want 2 (retried)",
	       atomic_load(&nr_fsync));
	t_check_disk_equals(path, buf, len);

	CHECK_EQ(wtio_pwrite(f, buf, 4096, 0, 0), 4096);
	atomic_store(&inj_eio, 1);
	CHECK_EQ(wtio_fdatasync(f), -EIO);
	CHECKF(atomic_load(&nr_foreign) == 0,
	       "%d sync system calls made by another thread",
	       atomic_load(&nr_foreign));

	(void)wtio_close(f);
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
	printf("PASS\n");
	return T_EXIT_PASS;
}
