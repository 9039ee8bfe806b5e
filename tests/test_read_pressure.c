/* SPDX-License-Identifier: MIT */
/*
 * test_read_pressure - reads of a healthy file never fail for lack of
 * cache: four readers of random lengths (up to 64 KiB) over a 1 MiB file
 * in the smallest cache (16 folios), the default backend and psync. Each miss takes a run
 * of folios and keeps them locked across its I/O; another reader's
 * allocation must wait for them, not give up with -ENOMEM as if they
 * were pinned for ever. Every read must return its full count and the
 * file's bytes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "helpers.h"

#define FILE_SIZE	(1u << 20)
#define MAX_LEN		65536
#define READERS		4
#define RUN_MS		1500

static struct wtio_file *file;
static atomic_bool stop;
static atomic_long nr_reads, nr_bad;

static unsigned char byte_at(size_t off)
{
	return (unsigned char)(off / 4096 * 7 + 1);
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	unsigned char *buf = malloc(MAX_LEN);

	CHECK(buf);
	while (!atomic_load(&stop)) {
		size_t off = (size_t)rand_r(&seed) % FILE_SIZE;
		size_t len = 1 + (size_t)rand_r(&seed) % MAX_LEN;
		size_t want = len < FILE_SIZE - off ? len : FILE_SIZE - off;
		ssize_t r = wtio_pread(file, buf, len, (off_t)off, 0);
		size_t i;

		atomic_fetch_add(&nr_reads, 1);
		if (r != (ssize_t)want) {
			if (atomic_fetch_add(&nr_bad, 1) < 5)
				fprintf(stderr, "pread off %zu len %zu: %zd, want %zu\n",
					off, len, r, want);
			continue;
		}
		for (i = 0; i < want; i++)
			if (buf[i] != byte_at(off + i)) {
				if (atomic_fetch_add(&nr_bad, 1) < 5)
					fprintf(stderr, "wrong byte at %zu\n", off + i);
				break;
			}
	}
	free(buf);
	return NULL;
}

static void run(const char *path, enum wtio_backend backend, const char *name)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	pthread_t th[READERS];
	struct timespec ts = { RUN_MS / 1000, (RUN_MS % 1000) * 1000000L };
	int i, ret;

	wtio_config_init(&cfg);
	cfg.cache_size = 16 * 4096;
	cfg.backend = backend;
	ret = wtio_ctx_create(&cfg, &ctx);
	CHECK_OK(ret);
	CHECK_OK(wtio_open(ctx, path, O_RDONLY, 0, 0, &file));
	atomic_store(&stop, false);
	atomic_store(&nr_reads, 0);
	atomic_store(&nr_bad, 0);
	for (i = 0; i < READERS; i++)
		CHECK(!pthread_create(&th[i], NULL, reader,
				      (void *)(uintptr_t)(i * 31 + 5)));
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("%s: %ld reads, %ld failed or wrong\n", name,
	       atomic_load(&nr_reads), atomic_load(&nr_bad));
	CHECKF(atomic_load(&nr_bad) == 0, "%s: reads failed under pressure\n",
	       name);
	CHECK(atomic_load(&nr_reads) > 0);
}

int main(void)
{
	const char *path = t_tmpfile("read_pressure");
	unsigned char *b = malloc(FILE_SIZE);
	size_t i;
	int fd;

	t_watchdog(60, "read_pressure: hung\n");
	CHECK(b);
	for (i = 0; i < FILE_SIZE; i++)
		b[i] = byte_at(i);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, b, FILE_SIZE), FILE_SIZE);
	CHECK_OK(fsync(fd));
	close(fd);
	free(b);
	run(path, WTIO_BACKEND_AUTO, "default backend");
	run(path, WTIO_BACKEND_PSYNC, "psync");
	return T_EXIT_PASS;
}
