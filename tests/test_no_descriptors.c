/* SPDX-License-Identifier: MIT */
/*
 * test_no_descriptors - a thread that cannot get an io_uring ring (the
 * process has used up its descriptors: EMFILE) still does its I/O. Under
 * the preload shim a program that opens files up to its limit and then
 * closes one made libwtio's first write-back in that thread fail with
 * EMFILE, and the close dropped the written data. Here every descriptor
 * is taken, then a new thread writes back (fsync, close), writes
 * through, and reads a block that is not cached: each must succeed and
 * the file must hold every byte.
 */
#include <pthread.h>
#include <sys/resource.h>

#include "helpers.h"

#define LEN	(256u << 10)
#define MAX_FDS	4096

static struct wtio_file *file;
static int ret_fsync, ret_wt, ret_read, ret_close;
static unsigned char *rbuf;

static void *no_fd_thread(void *arg)
{
	unsigned char *wt = arg;

	ret_fsync = wtio_fsync(file);
	ret_wt = (int)wtio_pwrite(file, wt, 4096, LEN, WTIO_WRITETHROUGH);
	ret_read = (int)wtio_pread(file, rbuf, 4096, 2 * LEN, 0);
	ret_close = wtio_close(file);
	return NULL;
}

static void run(const char *path, enum wtio_backend backend, const char *name)
{
	unsigned char *buf = t_malloc(LEN + 4096), *disk = t_malloc(LEN + 4096);
	static int fds[MAX_FDS];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	pthread_t th;
	int fd, nr = 0, i;

	rbuf = t_malloc(4096);
	/* A block past what the writes cover, for the read miss. */
	t_fill(buf, 4096, 99, 2 * LEN);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	CHECK_EQ(pwrite(fd, buf, 4096, 2 * LEN), 4096);
	close(fd);

	wtio_config_init(&cfg);
	cfg.backend = backend;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR, 0, 0, &file));
	t_fill(buf, LEN + 4096, 7, 0);
	CHECK_EQ(wtio_pwrite(file, buf, LEN, 0, 0), (ssize_t)LEN);

	/* Every descriptor the process may have, taken. */
	while (nr < MAX_FDS && (fd = dup(0)) >= 0)
		fds[nr++] = fd;
	CHECKF(nr < MAX_FDS, "%s: the descriptor limit is too high to reach\n",
	       name);
	CHECK(!pthread_create(&th, NULL, no_fd_thread, buf + LEN));
	pthread_join(th, NULL);
	for (i = 0; i < nr; i++)
		close(fds[i]);

	printf("%s: fsync %d, write-through %d, read miss %d, close %d\n",
	       name, ret_fsync, ret_wt, ret_read, ret_close);
	CHECKF(ret_fsync == 0, "%s: fsync without descriptors: %d\n", name,
	       ret_fsync);
	CHECKF(ret_wt == 4096, "%s: write-through without descriptors: %d\n",
	       name, ret_wt);
	CHECKF(ret_read == 4096, "%s: read miss without descriptors: %d\n",
	       name, ret_read);
	CHECKF(ret_close == 0, "%s: close without descriptors: %d\n", name,
	       ret_close);
	CHECKF(t_verify(rbuf, 4096, 99, 2 * LEN) < 0, "%s: read miss wrong\n",
	       name);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, disk, LEN + 4096, 0), (ssize_t)(LEN + 4096));
	close(fd);
	CHECKF(t_memdiff(disk, buf, LEN + 4096) < 0,
	       "%s: the file lost written bytes (first at %lld)\n", name,
	       t_memdiff(disk, buf, LEN + 4096));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(buf);
	free(disk);
	free(rbuf);
}

int main(void)
{
	const char *path = t_tmpfile("no_descriptors");
	struct rlimit rl;

	t_watchdog(60, "no_descriptors: hung\n");
	t_require_odirect();
	/* A limit low enough to use up quickly; the test's own stays. */
	CHECK_OK(getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_cur > 1024) {
		rl.rlim_cur = 1024;
		CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
	}
	run(path, WTIO_BACKEND_AUTO, "default backend");
	run(path, WTIO_BACKEND_PSYNC, "psync");
	return T_EXIT_PASS;
}
