/* SPDX-License-Identifier: MIT */
/*
 * shared_seek.c - lseek under `wtio-run --shared` when the client answers
 * it from the holder's shared page (preload/remote_shm.c): every position
 * a local seek sets is the one the next read, write or seek uses, in this
 * thread, another thread, a forked child sharing the description, after a
 * dup and after the file is passed through (mmap); SEEK_END follows sizes
 * that other descriptions and processes change; a negative result is
 * EINVAL and moves nothing; fstat's size is the same as SEEK_END's. It
 * makes LOOPS local seeks and LOOPS fstats more, so that the
 * script can see in the holder's stats that they were not asked of it.
 *   shared_seek DIR LOOPS
 * Prints PASS: seek, or FAIL: with the step.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SZ 65536

static char path[4096], path2[4096];

#define CHECK(c, ...)                                                       \
	do {                                                                \
		if (!(c)) {                                                 \
			printf("FAIL: seek: line %d: ", __LINE__);          \
			printf(__VA_ARGS__);                                \
			printf(" (errno %s)\n", strerror(errno));           \
			exit(1);                                            \
		}                                                           \
	} while (0)

static unsigned char pat(off_t i, int gen)
{
	return (unsigned char)(i * 7 + 3 + gen * 31);
}

static void fill(int fd, off_t from, off_t len, int gen)
{
	unsigned char b[4096];
	off_t o;

	for (o = from; o < from + len; o += (off_t)sizeof(b)) {
		size_t n = sizeof(b), i;

		if ((off_t)n > from + len - o)
			n = (size_t)(from + len - o);
		for (i = 0; i < n; i++)
			b[i] = pat(o + (off_t)i, gen);
		CHECK(pwrite(fd, b, n, o) == (ssize_t)n, "pwrite at %lld",
		      (long long)o);
	}
}

/* read(fd) of one byte is the pattern at where: the position was where */
static void read_at(int fd, off_t where, int gen, const char *what)
{
	unsigned char c;

	CHECK(read(fd, &c, 1) == 1, "%s: read", what);
	CHECK(c == pat(where, gen), "%s: read got 0x%02x, want 0x%02x (position %lld)",
	      what, c, pat(where, gen), (long long)where);
}

static void expect_size(int fd, off_t want, const char *what)
{
	struct stat st;

	CHECK(fstat(fd, &st) == 0, "%s: fstat", what);
	CHECK(st.st_size == want, "%s: fstat size %lld, want %lld", what,
	      (long long)st.st_size, (long long)want);
	CHECK(S_ISREG(st.st_mode), "%s: fstat mode 0%o", what, st.st_mode);
}

static void expect_pos(int fd, off_t want, const char *what)
{
	off_t p = lseek(fd, 0, SEEK_CUR);

	CHECK(p == want, "%s: position %lld, want %lld", what, (long long)p,
	      (long long)want);
}

struct pingpong {
	int fd;
	int loops;
	pthread_mutex_t m;
	pthread_cond_t c;
	off_t where;		/* set by the seeker, -1 once read */
	int bad;
};

static void *reader(void *arg)
{
	struct pingpong *pp = arg;
	int i;

	for (i = 0; i < pp->loops; i++) {
		unsigned char c;
		off_t w;

		pthread_mutex_lock(&pp->m);
		while (pp->where < 0)
			pthread_cond_wait(&pp->c, &pp->m);
		w = pp->where;
		pthread_mutex_unlock(&pp->m);
		if (read(pp->fd, &c, 1) != 1 || c != pat(w, 0))
			pp->bad++;
		pthread_mutex_lock(&pp->m);
		pp->where = -1;
		pthread_cond_signal(&pp->c);
		pthread_mutex_unlock(&pp->m);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int fd, fd2, fd3, loops, i, st;
	struct pingpong pp;
	pthread_t t;
	pid_t pid;
	off_t r;
	void *m;

	if (argc != 3) {
		fprintf(stderr, "usage: shared_seek DIR LOOPS\n");
		return 2;
	}
	loops = atoi(argv[2]);
	snprintf(path, sizeof(path), "%s/seek", argv[1]);
	snprintf(path2, sizeof(path2), "%s/seek-mmap", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0, "open %s", path);
	CHECK(lseek(fd, 0, SEEK_END) == 0, "SEEK_END of a new file");
	fill(fd, 0, SZ, 0);

	/* SEEK_END after this description's own writes, many times */
	for (i = 0; i < loops; i++)
		CHECK((r = lseek(fd, 0, SEEK_END)) == SZ, "SEEK_END %lld", (long long)r);
	for (i = 0; i < loops; i++)
		expect_size(fd, SZ, "fstat after the writes");
	CHECK(lseek(fd, -10, SEEK_END) == SZ - 10, "SEEK_END - 10");
	read_at(fd, SZ - 10, 0, "after SEEK_END - 10");
	expect_pos(fd, SZ - 9, "after the read");

	/* SEEK_SET, then SEEK_CUR from it, then read(): all one position */
	CHECK(lseek(fd, 100, SEEK_SET) == 100, "SEEK_SET 100");
	CHECK(lseek(fd, 5, SEEK_CUR) == 105, "SEEK_CUR +5");
	CHECK(lseek(fd, -3, SEEK_CUR) == 102, "SEEK_CUR -3");
	read_at(fd, 102, 0, "after SET/CUR/CUR");
	expect_pos(fd, 103, "after it");

	/* a negative result: EINVAL, the position unchanged */
	CHECK(lseek(fd, 7, SEEK_SET) == 7, "SEEK_SET 7");
	errno = 0;
	CHECK(lseek(fd, -SZ - 1, SEEK_END) == -1 && errno == EINVAL,
	      "negative SEEK_END not EINVAL");
	errno = 0;
	CHECK(lseek(fd, -8, SEEK_CUR) == -1 && errno == EINVAL,
	      "negative SEEK_CUR not EINVAL");
	expect_pos(fd, 7, "after the EINVALs");

	/* write() at a position set locally */
	CHECK(lseek(fd, 4000, SEEK_SET) == 4000, "SEEK_SET 4000");
	{
		unsigned char b[3] = { pat(4000, 1), pat(4001, 1), pat(4002, 1) };

		CHECK(write(fd, b, 3) == 3, "write at 4000");
		CHECK(lseek(fd, 4000, SEEK_SET) == 4000, "SEEK_SET 4000 again");
		read_at(fd, 4000, 1, "the write at the local position");
		fill(fd, 4000, 3, 0);
	}

	/* SEEK_END follows another description's extension and truncation */
	fd2 = open(path, O_RDWR);
	CHECK(fd2 >= 0, "second open");
	fill(fd2, SZ, 4096, 0);
	CHECK(lseek(fd, 0, SEEK_END) == SZ + 4096, "SEEK_END after fd2 extended");
	expect_size(fd, SZ + 4096, "fstat after fd2 extended");
	CHECK(ftruncate(fd2, SZ) == 0, "ftruncate fd2");
	CHECK(lseek(fd, 0, SEEK_END) == SZ, "SEEK_END after fd2 truncated");
	expect_size(fd, SZ, "fstat after fd2 truncated");
	/* its own position is its own */
	CHECK(lseek(fd2, 500, SEEK_SET) == 500, "fd2 SEEK_SET");
	CHECK(lseek(fd, 600, SEEK_SET) == 600, "fd SEEK_SET");
	read_at(fd2, 500, 0, "fd2's own position");
	read_at(fd, 600, 0, "fd's own position");

	/* an O_APPEND description: a local SEEK_SET does not stop append */
	fd3 = open(path, O_RDWR | O_APPEND);
	CHECK(fd3 >= 0, "O_APPEND open");
	CHECK(lseek(fd3, 0, SEEK_SET) == 0, "SEEK_SET on O_APPEND");
	{
		unsigned char c = pat(SZ, 0);

		CHECK(write(fd3, &c, 1) == 1, "append");
	}
	expect_pos(fd3, SZ + 1, "after the append");
	CHECK(lseek(fd, 0, SEEK_END) == SZ + 1, "SEEK_END after the append");
	CHECK(ftruncate(fd, SZ) == 0, "ftruncate back");
	close(fd3);

	/* a dup shares the position */
	fd3 = dup(fd);
	CHECK(fd3 >= 0, "dup");
	CHECK(lseek(fd3, 42, SEEK_SET) == 42, "SEEK_SET on the dup");
	read_at(fd, 42, 0, "the dup's position through the original");
	close(fd3);

	/* a forked child shares it both ways; its own open extends the file */
	CHECK(lseek(fd, 200, SEEK_SET) == 200, "SEEK_SET 200 before fork");
	pid = fork();
	CHECK(pid >= 0, "fork");
	if (pid == 0) {
		int cfd;

		read_at(fd, 200, 0, "child: the parent's position");
		CHECK(lseek(fd, 300, SEEK_SET) == 300, "child SEEK_SET 300");
		cfd = open(path, O_RDWR);
		CHECK(cfd >= 0, "child open");
		fill(cfd, SZ, 8192, 0);
		close(cfd);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "child failed (status 0x%x)", st);
	read_at(fd, 300, 0, "parent: the child's position");
	CHECK(lseek(fd, 0, SEEK_END) == SZ + 8192, "SEEK_END after the child's extension");
	expect_size(fd, SZ + 8192, "fstat after the child's extension");
	CHECK(ftruncate(fd, SZ) == 0, "ftruncate after the child");

	/* another thread reads at positions this one sets (its own
	 * connection to the holder) */
	memset(&pp, 0, sizeof(pp));
	pp.fd = fd;
	pp.loops = loops;
	pp.where = -1;
	pthread_mutex_init(&pp.m, NULL);
	pthread_cond_init(&pp.c, NULL);
	CHECK(pthread_create(&t, NULL, reader, &pp) == 0, "pthread_create");
	for (i = 0; i < loops; i++) {
		off_t w = (off_t)((i * 2654435761u) % (SZ - 1));

		CHECK(lseek(fd, w, SEEK_SET) == w, "ping SEEK_SET");
		pthread_mutex_lock(&pp.m);
		pp.where = w;
		pthread_cond_signal(&pp.c);
		while (pp.where >= 0)
			pthread_cond_wait(&pp.c, &pp.m);
		pthread_mutex_unlock(&pp.m);
	}
	pthread_join(t, NULL);
	CHECK(pp.bad == 0, "%d of %d reads in the other thread missed the position",
	      pp.bad, loops);

	/* passed through with a position set locally: the kernel's
	 * description takes it */
	fd3 = open(path2, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd3 >= 0, "open %s", path2);
	fill(fd3, 0, SZ, 0);
	CHECK(lseek(fd3, 1234, SEEK_SET) == 1234, "SEEK_SET before mmap");
	m = mmap(NULL, SZ, PROT_READ, MAP_SHARED, fd3, 0);
	CHECK(m != MAP_FAILED, "mmap");
	CHECK(((unsigned char *)m)[77] == pat(77, 0), "mmap sees the data");
	read_at(fd3, 1234, 0, "after the file passed through");
	expect_pos(fd3, 1235, "passed through");
	CHECK(lseek(fd3, 0, SEEK_END) == SZ, "SEEK_END passed through");
	expect_size(fd3, SZ, "fstat passed through");
	munmap(m, SZ);
	close(fd3);

	close(fd2);
	CHECK(close(fd) == 0, "close");
	printf("PASS: seek\n");
	return 0;
}
