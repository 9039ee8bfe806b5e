/* SPDX-License-Identifier: MIT */
/*
 * shim_io_gate.c - under wtio-run, a call that needs a served file's
 * description exclusive (a second open of the file, an mmap, a fork: each
 * passes it through) gets it while other threads keep doing I/O on it.
 * The shim's io_lock is a reader-preferring rwlock; with 4 threads in
 * pread or pwrite loops their shared holds always overlapped, and the
 * exclusive taker waited for as long as they went on (seconds, or for
 * ever), holding the lock every other open and fstat needed.
 *
 * The I/O threads stop after LIMIT seconds on their own; the check is
 * that the exclusive call returned while they were all still going, not
 * how fast. Usage: shim_io_gate DIR r|w open|mmap|fork. Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS	4
#define LIMIT	30	/* seconds the I/O goes on at most */

static int fd, writing;
static atomic_int stop, running, failed;
static time_t start;

static void *io(void *arg)
{
	char b[4096];
	long n = 0;

	(void)arg;
	memset(b, 'x', sizeof(b));
	atomic_fetch_add(&running, 1);
	while (!atomic_load(&stop)) {
		ssize_t r = writing ? pwrite(fd, b, sizeof(b), (n % 16) * 4096) :
				      pread(fd, b, sizeof(b), (n % 16) * 4096);

		if (r != (ssize_t)sizeof(b)) {
			atomic_store(&failed, 1);
			break;
		}
		n++;
		if ((n & 1023) == 0 && time(NULL) - start > LIMIT)
			break;
	}
	atomic_fetch_sub(&running, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[THREADS];
	char path[4096], buf[65536];
	const char *what;
	int i, still;

	if (argc != 4) {
		fprintf(stderr, "usage: %s DIR r|w open|mmap|fork\n", argv[0]);
		return 1;
	}
	writing = argv[2][0] == 'w';
	what = argv[3];
	snprintf(path, sizeof(path), "%s/gate.dat", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	memset(buf, 'a', sizeof(buf));
	if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
		perror("setup");
		return 1;
	}
	start = time(NULL);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, io, NULL);
	while (atomic_load(&running) < THREADS)
		usleep(1000);
	usleep(200000);
	if (!strcmp(what, "open")) {
		int fd2 = open(path, O_RDONLY);

		if (fd2 < 0 || close(fd2) < 0) {
			perror("second open");
			return 1;
		}
	} else if (!strcmp(what, "mmap")) {
		void *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);

		if (m == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		munmap(m, 4096);
	} else {
		pid_t c = fork();

		if (c == 0)
			_exit(0);
		if (c < 0 || waitpid(c, NULL, 0) != c) {
			perror("fork");
			return 1;
		}
	}
	still = atomic_load(&running);
	atomic_store(&stop, 1);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	if (atomic_load(&failed)) {
		fprintf(stderr, "FAIL: an I/O thread's call failed\n");
		return 1;
	}
	if (still < THREADS) {
		fprintf(stderr, "FAIL: %s with %d %s threads returned only after %d of them had stopped (after %ld s): it waited for the I/O to end\n",
			what, THREADS, writing ? "writer" : "reader",
			THREADS - still, (long)(time(NULL) - start));
		return 1;
	}
	printf("ok: %s returned while %d %s threads kept going (%ld s)\n", what,
	       THREADS, writing ? "writer" : "reader",
	       (long)(time(NULL) - start));
	return 0;
}
