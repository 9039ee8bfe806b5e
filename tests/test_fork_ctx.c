/* SPDX-License-Identifier: MIT */
/*
 * test_fork_ctx.c - a context used in a child of fork() fails cleanly:
 * every call on it, its files and its queues is -ECHILD at once (no hang:
 * the child has no flusher or reaper threads; its io_uring rings are the
 * parent's, shared, and an AIO context is the parent mm's, so io_submit
 * would be EINVAL), and touches nothing of the parent's (its I/O, its
 * cache, its file on disk), and its arena is not in the child at all (no
 * copy of the cache in fork); a new context made in the child works. Over
 * io_uring with its own channels, io_uring with AIO channels
 * (WTIO_CONFIG_AIO_CHANNELS) and psync, with dirty data, a write-through
 * file and a queue with requests done at the fork.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "helpers.h"
#include "ctx.h"

#define FOLIO	4096
#define LEN	(256 * 1024)

struct setup {
	const char *name;
	uint32_t backend;
	uint32_t flags;
};

static const struct setup setups[] = {
	{ "io_uring", WTIO_BACKEND_IO_URING, 0 },
	{ "io_uring+aio-channels", WTIO_BACKEND_IO_URING,
	  WTIO_CONFIG_AIO_CHANNELS },
	{ "psync+aio-channels", WTIO_BACKEND_PSYNC, WTIO_CONFIG_AIO_CHANNELS },
	{ "psync", WTIO_BACKEND_PSYNC, 0 },
};

/* In the child: a failed check is its exit status 1 (no atexit: the
 * parent's temporary files are the parent's). */
#define CCHECK(expr, want) do {						\
	long long r_ = (long long)(expr), w_ = (long long)(want);	\
									\
	if (r_ != w_) {							\
		printf("child: %s: %s returned %lld, want %lld\n",	\
		       name, #expr, r_, w_);				\
		_exit(1);						\
	}								\
} while (0)

static void child(const char *name, const struct wtio_config *cfg,
		  struct wtio_ctx *ctx, struct wtio_file *f,
		  struct wtio_file *wt, struct wtio_queue *q,
		  const char *path, const char *other)
{
	struct wtio_config c2 = *cfg;
	struct wtio_ctx *ctx2 = NULL;
	struct wtio_file *g = NULL, *h = NULL;
	struct wtio_queue *q2 = NULL;
	struct wtio_file_info info;
	struct wtio_stats st;
	struct wtio_cqe cqe;
	static uint8_t buf[LEN], back[LEN];

	alarm(30);	/* a hang is a kill, which the parent sees */
	{
		/* The parent's arena did not come along (MADV_DONTFORK):
		 * its io_uring-pinned pages would have been copied in
		 * fork() itself, the whole cache. */
		unsigned char vec;

		CCHECK(mincore(ctx->arena, 4096, &vec), -1);
		CCHECK(errno, ENOMEM);
	}
	memset(buf, 0xcc, sizeof(buf));
	CCHECK(wtio_pwrite(f, buf, 4096, 0, 0), -ECHILD);
	CCHECK(wtio_pwrite(wt, buf, 4096, 0, WTIO_WRITETHROUGH), -ECHILD);
	CCHECK(wtio_pread(f, back, 4096, 0, 0), -ECHILD);
	CCHECK(wtio_fsync(f), -ECHILD);
	CCHECK(wtio_fdatasync(wt), -ECHILD);
	CCHECK(wtio_sync_range(f, 0, 0, WTIO_SYNC_RANGE_WRITE |
			       WTIO_SYNC_RANGE_WAIT_AFTER), -ECHILD);
	CCHECK(wtio_ftruncate(f, 0), -ECHILD);
	CCHECK(wtio_file_size(f), -ECHILD);
	CCHECK(wtio_file_max_size(f), -ECHILD);
	CCHECK(wtio_file_info(f, &info), -ECHILD);
	CCHECK(wtio_open(ctx, path, O_RDWR, 0, 0, &g), -ECHILD);
	CCHECK(g == NULL, 1);
	CCHECK(wtio_queue_pwrite(q, wt, buf, 4096, 0, WTIO_WRITETHROUGH, 7),
	       -ECHILD);
	CCHECK(wtio_queue_pread(q, f, back, 4096, 0, 0, 8), -ECHILD);
	CCHECK(wtio_queue_reap(q, &cqe, 1, 1, -1), -ECHILD);
	CCHECK(wtio_queue_eventfd(q), -ECHILD);
	CCHECK(wtio_queue_inflight(q), 0);
	CCHECK(wtio_queue_create(ctx, 8, &q2), -ECHILD);
	CCHECK(wtio_queue_destroy(q), -ECHILD);
	CCHECK(wtio_stats(ctx, &st), -ECHILD);
	CCHECK(wtio_close(f), -ECHILD);
	CCHECK(wtio_close(wt), -ECHILD);
	CCHECK(wtio_ctx_destroy(ctx), -ECHILD);
	/* A context of the child's own works, with the same channels. */
	CCHECK(wtio_ctx_create(&c2, &ctx2), 0);
	CCHECK(wtio_open(ctx2, other, O_RDWR, 0, 0, &h), 0);
	CCHECK(wtio_pwrite(h, buf, LEN, 0, WTIO_WRITETHROUGH), LEN);
	CCHECK(wtio_pwrite(h, buf, 4096, LEN, 0), 4096);
	CCHECK(wtio_fsync(h), 0);
	CCHECK(wtio_pread(h, back, LEN, 0, 0), LEN);
	CCHECK(memcmp(back, buf, LEN), 0);
	CCHECK(wtio_queue_create(ctx2, 8, &q2), 0);
	CCHECK(wtio_queue_pwrite(q2, h, buf, 4096, 8192, WTIO_WRITETHROUGH, 9),
	       0);
	CCHECK(wtio_queue_reap(q2, &cqe, 1, 1, -1), 1);
	CCHECK(cqe.res, 4096);
	CCHECK(wtio_queue_destroy(q2), 0);
	CCHECK(wtio_close(h), 0);
	CCHECK(wtio_ctx_destroy(ctx2), 0);
	_exit(0);
}

/* Whether every other thread of this process (not io_uring's kernel
 * workers, which run no user code) is asleep ('S') now. */
static bool others_asleep(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool quiet = true;

	if (!d)
		return true;
	while (quiet && (e = readdir(d))) {
		char p[96], buf[256], *rp;
		int fd, tid = atoi(e->d_name);
		ssize_t n;

		if (tid <= 0 || tid == self)
			continue;
		snprintf(p, sizeof(p), "/proc/self/task/%d/stat", tid);
		fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;	/* gone */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		rp = strrchr(buf, ')');
		if (strstr(buf, "(iou-") || !rp || rp[1] != ' ')
			continue;
		quiet = rp[2] == 'S';
	}
	closedir(d);
	return quiet;
}

/*
 * Fork only while the context's threads sleep (up to 5 s, then anyway).
 * A thread caught by fork() inside the allocator leaves its lock held in
 * the child: glibc's malloc takes its locks around fork, but the
 * AddressSanitizer runtime of GCC 12 does not for its size-class
 * regions, and the child's first threads then hung in free() (seen in
 * CI once: a context's threads still starting under load, the child
 * killed by its 30 s alarm). Not what this test is about.
 */
static pid_t fork_quiet(void)
{
	int i, calm = 0;

	for (i = 0; i < 5000 && calm < 3; i++) {
		calm = others_asleep() ? calm + 1 : 0;
		usleep(1000);
	}
	fflush(stdout);
	return fork();
}

static void one(const struct setup *s)
{
	static uint8_t shadow[LEN], wshadow[LEN];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f, *wt;
	struct wtio_queue *q;
	struct wtio_cqe cqe;
	const char *path = t_tmpfile("fork-ctx"), *wpath = t_tmpfile("fork-wt");
	const char *other = t_tmpfile("fork-child");
	int status;
	pid_t pid;
	size_t n;
	uint8_t *disk;

	wtio_config_init(&cfg);
	cfg.folio_size = FOLIO;
	cfg.cache_size = 1024 * FOLIO;
	cfg.backend = s->backend;
	cfg.flags |= s->flags;
	ctx = t_ctx_create_backend(&cfg, s->name);
	if (!ctx)
		return;
	f = t_open(ctx, path, O_RDWR);
	wt = t_open(ctx, wpath, O_RDWR);
	CHECK_OK(wtio_queue_create(ctx, 8, &q));
	t_fill(shadow, LEN, 1, 0);
	t_fill(wshadow, LEN, 2, 0);
	/* dirty data in the cache, a written-through file, a queue used */
	CHECK_EQ(wtio_pwrite(f, shadow, LEN, 0, 0), LEN);
	CHECK_EQ(wtio_pwrite(wt, wshadow, LEN / 2, 0, WTIO_WRITETHROUGH),
		 LEN / 2);
	CHECK_OK(wtio_queue_pwrite(q, wt, wshadow + LEN / 2, LEN / 2, LEN / 2,
				   WTIO_WRITETHROUGH, 1));
	CHECK_EQ(wtio_queue_reap(q, &cqe, 1, 1, -1), 1);
	CHECK_EQ(cqe.res, LEN / 2);
	pid = fork_quiet();
	CHECK(pid >= 0);
	if (pid == 0)
		child(s->name, &cfg, ctx, f, wt, q, path, other);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "%s: the child %s %d", s->name,
	       WIFEXITED(status) ? "exited" : "was killed by signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	/* The parent's context goes on as if nothing happened. */
	t_check_wtio_range(f, shadow, LEN, 0, LEN);
	t_check_wtio_range(wt, wshadow, LEN, 0, LEN);
	t_fill(shadow, 4096, 3, 0);
	CHECK_EQ(wtio_pwrite(f, shadow, 4096, 0, WTIO_WRITETHROUGH), 4096);
	CHECK_OK(wtio_fsync(f));
	CHECK_OK(wtio_fsync(wt));
	t_check_disk_equals(path, shadow, LEN);
	t_check_disk_equals(wpath, wshadow, LEN);
	CHECK_OK(wtio_queue_destroy(q));
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_close(wt));
	CHECK_OK(wtio_ctx_destroy(ctx));
	/* what the child's own context wrote */
	disk = t_read_disk(other, &n);
	CHECK_EQ(n, LEN + 4096);
	free(disk);
	printf("ok: %s: every call of the child on the parent's context "
	       "-ECHILD, its own context works, the parent's untouched\n",
	       s->name);
}

int main(void)
{
	size_t i;

	t_require_odirect();
	for (i = 0; i < sizeof(setups) / sizeof(setups[0]); i++)
		one(&setups[i]);
	printf("fork_ctx: PASS\n");
	return T_EXIT_PASS;
}
