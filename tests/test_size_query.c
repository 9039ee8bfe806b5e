/* SPDX-License-Identifier: MIT */
/*
 * test_size_query.c - wtio reads the backing file's size without querying
 * its times. On a filesystem with multigrain timestamps (tmpfs, XFS) a
 * ctime query obliges the next write to take a fine-grained time and log
 * an update, and makes the next io_uring NOWAIT direct write fail over to
 * an io-wq worker; nobody sees the times wtio would read, so it must not
 * ask for them.
 *
 * Seen through the timestamp:fill_mg_cmtime tracepoint (root, tracefs),
 * in a trace instance of its own filtered to this thread: a control fstat
 * fires it; extending WTIO_DSYNC write-through appends, each of which
 * reads the backing size to make it exact, fire none. The appends still
 * move the mtime past the one the control fstat saw, as the kernel's
 * writes would.
 */
#include "helpers.h"

#include <sys/syscall.h>

#define NR 20
#define REC 100

static char inst[256];
static char path[256];		/* the test file, removed at any exit */

static int put(const char *file, const char *val)
{
	char p[512];
	int fd, ok;

	snprintf(p, sizeof(p), "%s/%s", inst, file);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

/* The tracepoint's hits in the instance's buffer. */
static int hits(void)
{
	static char buf[1 << 16];
	char p[512];
	ssize_t n;
	int fd, nr = 0;
	char *s;

	snprintf(p, sizeof(p), "%s/trace", inst);
	fd = open(p, O_RDONLY);
	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n >= 0);
	buf[n] = 0;
	for (s = buf; (s = strstr(s, "fill_mg_cmtime:")); s++)
		nr++;
	return nr;
}

static void remove_instance(void)
{
	put("events/timestamp/fill_mg_cmtime/enable", "0");
	rmdir(inst);
	if (path[0])
		unlink(path);
}

int main(void)
{
	const char *base = "/sys/kernel/tracing";
	char filt[64];
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f;
	struct stat st0, st;
	char rec[REC];
	int fd, i, n;

	if (access("/sys/kernel/tracing/events/timestamp/fill_mg_cmtime",
		   F_OK))
		t_skip("timestamp:fill_mg_cmtime not visible (not root, no tracefs, or a kernel before 6.13)");
	snprintf(inst, sizeof(inst), "%s/instances/wtio-size-query.%d", base,
		 (int)getpid());
	if (mkdir(inst, 0700))
		t_skip("cannot make a trace instance: %s", strerror(errno));
	atexit(remove_instance);
	snprintf(filt, sizeof(filt), "common_pid == %ld", (long)syscall(SYS_gettid));
	CHECK_OK(put("events/timestamp/fill_mg_cmtime/filter", filt));

	snprintf(path, sizeof(path), "/dev/shm/wtio-size-query.%d", (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		t_skip("cannot create %s: %s", path, strerror(errno));
	wtio_config_init(&cfg);
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	i = wtio_open(ctx, path, O_RDWR, 0, 0, &f);
	if (i) {
		unlink(path);
		t_skip("wtio_open(%s): %s", path, strerror(-i));
	}

	/* The control: the kernel's own fstat queries the times. */
	CHECK_OK(put("events/timestamp/fill_mg_cmtime/enable", "1"));
	CHECK_OK(fstat(fd, &st0));
	n = hits();
	if (n < 1) {
		unlink(path);
		t_skip("%s has no multigrain timestamps", path);
	}

	memset(rec, 'r', sizeof(rec));
	for (i = 0; i < NR; i++)
		CHECK_EQ(wtio_pwrite(f, rec, REC, (off_t)i * REC,
				     WTIO_WRITETHROUGH | WTIO_DSYNC), REC);
	CHECK_OK(put("events/timestamp/fill_mg_cmtime/enable", "0"));
	CHECKF(hits() == n, "%d DSYNC appends queried the backing file's times "
	       "%d times", NR, hits() - n);

	CHECK_OK(fstat(fd, &st));
	CHECKF(st.st_size == NR * REC, "size %lld, want %d",
	       (long long)st.st_size, NR * REC);
	CHECKF(st.st_mtim.tv_sec > st0.st_mtim.tv_sec ||
	       (st.st_mtim.tv_sec == st0.st_mtim.tv_sec &&
		st.st_mtim.tv_nsec > st0.st_mtim.tv_nsec),
	       "the appends did not move the mtime past the one fstat saw");
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	close(fd);
	unlink(path);
	printf("PASS: %d DSYNC appends, no time query; mtime moved\n", NR);
	return 0;
}
