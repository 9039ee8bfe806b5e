/* SPDX-License-Identifier: MIT */
/*
 * shim_fork_threads FILE: fork() from a thread that holds dirty served
 * data but has never submitted I/O itself, after another thread has.
 * Under the per-process shim the fork writes every served file back in
 * its prepare handler; that thread's first I/O must not wait for a lock
 * the library's own fork handler already holds (it once did, forever).
 * Two shapes: the forking thread wrote the dirty data itself, and it did
 * no file I/O at all (a worker thread wrote, synced and wrote again: a
 * Python program calling subprocess.run). The child reads the whole file
 * and checks it; so does the parent. Exit 0 pass, 1 fail.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIECE 65536

static int fd;
static int shape;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void put(int i)
{
	char b[PIECE];

	memset(b, 'a' + i, sizeof(b));
	if (pwrite(fd, b, sizeof(b), (off_t)i * PIECE) != (ssize_t)sizeof(b))
		die("pwrite");
}

static int check(int n)
{
	char b[PIECE];
	int i, j;

	for (i = 0; i < n; i++) {
		if (pread(fd, b, sizeof(b), (off_t)i * PIECE) != (ssize_t)sizeof(b))
			return 1;
		for (j = 0; j < PIECE; j++)
			if (b[j] != 'a' + i)
				return 1;
	}
	return 0;
}

static void *worker(void *arg)
{
	(void)arg;
	if (shape == 1)
		put(1);
	if (fsync(fd))
		die("fsync");
	if (shape == 1)
		put(2);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pid_t pid;
	int st;

	if (argc != 2)
		return 2;
	for (shape = 0; shape < 2; shape++) {
		fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die("open");
		put(0);
		if (pthread_create(&t, NULL, worker, NULL))
			die("pthread_create");
		pthread_join(t, NULL);
		if (shape == 0) {
			put(1);		/* dirty again, from a thread with no I/O */
			put(2);
		}
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(check(3) ? 3 : 0);
		if (waitpid(pid, &st, 0) != pid)
			die("waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "shape %d: the child saw wrong data\n",
				shape);
			return 1;
		}
		if (check(3)) {
			fprintf(stderr, "shape %d: wrong data after fork\n", shape);
			return 1;
		}
		if (close(fd))
			die("close");
	}
	printf("done\n");
	return 0;
}
