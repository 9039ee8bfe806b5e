/* SPDX-License-Identifier: MIT */
/*
 * smallfile-create - fs_mark's small-file create loop (Debian has no
 * fs_mark package): T processes, each in a directory of its own, each
 * creates N files of S bytes (open O_CREAT|O_TRUNC, one write, an
 * optional fsync, close), as "fs_mark -n N -s S -t T -S 0|1 -k" does.
 * Run it bare and under wtio-run to compare the shim with the kernel.
 *
 *   smallfile-create -d DIR [-n 2000] [-s 4096] [-t 2] [-S 0|1] [-k]
 *                    [-r] [-q]
 *
 * -S 1 fsyncs each file before its close (fs_mark's -S 1); -k keeps the
 * files (else they are removed after the timing); -r opens O_RDWR instead
 * of O_WRONLY; -q prints only the files/s figure. The time runs from
 * the start signal to the end of the last process's loop (its exit is
 * not counted: fs_mark too times the loop); files/s is all files over
 * that time. Each process's first open under wtio-run sets up its cache.
 * Exit status 0, or 1 when a call failed (the call and errno are said).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "smallfile-create: %s %s: %s\n", what, path,
		strerror(errno));
	_exit(1);
}

/* One process's loop; start is read from go when every process is set. */
static void child(const char *dir, long n, size_t size, int do_fsync,
		  int oflags, int go, int done)
{
	double end;
	char path[PATH_MAX], c;
	char *buf = malloc(size ? size : 1);
	long i;

	if (!buf)
		die("malloc", "");
	memset(buf, 0x5a, size);
	if (read(go, &c, 1) != 1)
		die("read", "start pipe");
	for (i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		fd = open(path, oflags | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open", path);
		if (size && write(fd, buf, size) != (ssize_t)size)
			die("write", path);
		if (do_fsync && fsync(fd))
			die("fsync", path);
		if (close(fd))
			die("close", path);
	}
	/* The loop's end, not the process's: exit is not counted. */
	end = now_s();
	if (write(done, &end, sizeof(end)) != sizeof(end))
		die("write", "result pipe");
	free(buf);
	_exit(0);
}

static void remove_dir(const char *dir, long n)
{
	char path[PATH_MAX];
	long i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

int main(int argc, char **argv)
{
	const char *base = NULL;
	long n = 2000, t = 2, i;
	size_t size = 4096;
	int do_fsync = 0, keep = 0, quiet = 0, oflags = O_WRONLY, opt;
	int pipefd[2], donefd[2], failed = 0;
	char top[PATH_MAX / 2], dir[PATH_MAX / 2 + 32];
	pid_t *pids;
	double t0, t1;

	while ((opt = getopt(argc, argv, "d:n:s:t:S:krq")) != -1) {
		switch (opt) {
		case 'd': base = optarg; break;
		case 'n': n = atol(optarg); break;
		case 's': size = (size_t)atol(optarg); break;
		case 't': t = atol(optarg); break;
		case 'S': do_fsync = atoi(optarg) != 0; break;
		case 'k': keep = 1; break;
		case 'r': oflags = O_RDWR; break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr, "usage: %s -d DIR [-n N] [-s SIZE] "
				"[-t PROCS] [-S 0|1] [-k] [-r] [-q]\n", argv[0]);
			return 2;
		}
	}
	if (!base || n < 1 || t < 1 || t > 64) {
		fprintf(stderr, "smallfile-create: -d DIR needed; -n >= 1, "
			"-t 1..64\n");
		return 2;
	}
	if (snprintf(top, sizeof(top), "%s/sfc-%d", base, (int)getpid()) >=
	    (int)sizeof(top)) {
		fprintf(stderr, "smallfile-create: -d: path too long\n");
		return 2;
	}
	if (mkdir(top, 0755))
		die("mkdir", top);
	pids = calloc((size_t)t, sizeof(*pids));
	if (!pids || pipe(pipefd) || pipe(donefd))
		die("pipe", "");
	for (i = 0; i < t; i++) {
		snprintf(dir, sizeof(dir), "%s/t%ld", top, i);
		if (mkdir(dir, 0755))
			die("mkdir", dir);
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork", "");
		if (pids[i] == 0) {
			close(pipefd[1]);
			close(donefd[0]);
			child(dir, n, size, do_fsync, oflags, pipefd[0],
			      donefd[1]);
		}
	}
	close(pipefd[0]);
	close(donefd[1]);
	t0 = now_s();
	for (i = 0; i < t; i++)
		if (write(pipefd[1], "g", 1) != 1)
			die("write", "start pipe");
	for (i = 0; i < t; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			failed = 1;
	}
	t1 = t0;
	for (i = 0; i < t; i++) {
		double end;

		if (read(donefd[0], &end, sizeof(end)) != sizeof(end)) {
			failed = 1;
			break;
		}
		if (end > t1)
			t1 = end;
	}
	close(pipefd[1]);
	close(donefd[0]);
	if (quiet)
		printf("%.0f\n", (double)(n * t) / (t1 - t0));
	else
		printf("%ld files of %zu bytes, %ld processes, fsync %s: "
		       "%.3f s, %.0f files/s\n", n * t, size, t,
		       do_fsync ? "before close" : "none", t1 - t0,
		       (double)(n * t) / (t1 - t0));
	if (!keep) {
		for (i = 0; i < t; i++) {
			snprintf(dir, sizeof(dir), "%s/t%ld", top, i);
			remove_dir(dir, n);
		}
		rmdir(top);
	}
	free(pids);
	return failed;
}
