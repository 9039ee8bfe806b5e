/* SPDX-License-Identifier: MIT */
/*
 * test_writer_fair - a writer gets the file lock while readers keep it
 * busy: three threads read a 256 KiB file at random in a 16-folio cache
 * (their misses hold the lock shared, one overlapping the next without a
 * gap) while the main thread truncates and rewrites it 50 times. With a
 * reader-preferring lock the truncate waited for ever (or for seconds,
 * behind ~10^4 reads). Counted: the read I/Os (misses, which read
 * under the lock held shared) done while one truncate waited; a fair
 * lock lets only those already holding it, and a few that slip in
 * before the truncate asks, go first. Cache hits need no lock and may
 * pass it: the readers stay below every truncation point, so none
 * ends at the end of the file. The
 * watchdog turns a truncate that never gets in into a failure. Every read must also see either the bytes written
 * or zeros past a shrink, never a failure.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define FILE_SIZE	(256u << 10)
#define MAX_LEN		65536
#define READERS		3
#define ROUNDS		50

static struct wtio_file *file;
static atomic_bool stop;
static atomic_long nr_reads, nr_bad;
/* Far above what a fair lock lets by (the reads of a few scheduler
 * time slices), far below what a reader-preferring one did. */
#define MAX_READS_WHILE_WAITING 500

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	unsigned char *buf = malloc(MAX_LEN);

	CHECK(buf);
	while (!atomic_load(&stop)) {
		size_t off = (size_t)rand_r(&seed) % (FILE_SIZE / 2 - MAX_LEN);
		size_t len = 1 + (size_t)rand_r(&seed) % MAX_LEN;
		ssize_t r = wtio_pread(file, buf, len, (off_t)off, 0);
		ssize_t i;

		atomic_fetch_add(&nr_reads, 1);
		if (r != (ssize_t)len) {
			if (atomic_fetch_add(&nr_bad, 1) < 5)
				fprintf(stderr, "pread off %zu len %zu: %zd\n",
					off, len, r);
			continue;
		}
		for (i = 0; i < r; i++)
			if (buf[i] != 'w') {
				if (atomic_fetch_add(&nr_bad, 1) < 5)
					fprintf(stderr, "byte %#x at %zd\n",
						buf[i], (ssize_t)off + i);
				break;
			}
	}
	free(buf);
	return NULL;
}

int main(void)
{
	const char *path = t_tmpfile("writer_fair");
	unsigned char *data = malloc(FILE_SIZE);
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	pthread_t th[READERS];
	struct wtio_stats st;
	uint64_t before, most = 0;
	int i;

	t_watchdog(60, "writer_fair: the writer never got the file lock\n");
	CHECK(data);
	memset(data, 'w', FILE_SIZE);
	wtio_config_init(&cfg);
	cfg.cache_size = 16 * 4096;
	CHECK_OK(wtio_ctx_create(&cfg, &ctx));
	CHECK_OK(wtio_open(ctx, path, O_RDWR, 0, 0, &file));
	CHECK_EQ(wtio_pwrite(file, data, FILE_SIZE, 0, 0), FILE_SIZE);
	for (i = 0; i < READERS; i++)
		CHECK(!pthread_create(&th[i], NULL, reader,
				      (void *)(uintptr_t)(i * 17 + 3)));
	for (i = 0; i < ROUNDS; i++) {
		off_t cut = (off_t)(FILE_SIZE / 2 +
				    ((unsigned int)i * 7919u) % (FILE_SIZE / 2));

		CHECK_OK(wtio_stats(ctx, &st));
		before = st.read_ios;
		CHECK_OK(wtio_ftruncate(file, cut));
		CHECK_OK(wtio_stats(ctx, &st));
		if (st.read_ios - before > most)
			most = st.read_ios - before;
		CHECK_EQ(wtio_pwrite(file, data + cut, FILE_SIZE - (size_t)cut,
				     cut, 0), (long long)(FILE_SIZE - (size_t)cut));
	}
	atomic_store(&stop, true);
	for (i = 0; i < READERS; i++)
		pthread_join(th[i], NULL);
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(data);
	printf("%d truncate+rewrite rounds beside %ld reads, %ld bad; at most "
	       "%llu read I/Os went by one truncate\n", ROUNDS,
	       atomic_load(&nr_reads), atomic_load(&nr_bad), (unsigned long long)most);
	CHECK(atomic_load(&nr_bad) == 0);
	CHECKF(most <= MAX_READS_WHILE_WAITING,
	       "a truncate waited behind %llu read I/Os\n",
	       (unsigned long long)most);
	return T_EXIT_PASS;
}
