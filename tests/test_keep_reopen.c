/* SPDX-License-Identifier: MIT */
/*
 * test_keep_reopen.c - WTIO_CONFIG_KEEP_CLOSED with more closed files
 * than the context keeps: every reopen sees the size and the bytes the
 * file's last close left, while other threads' opens evict other kept
 * files, and the disk holds them after wtio_ctx_destroy.
 *
 * Threads cycle over files of their own: open, check size and data
 * against the thread's model, append (or rewrite from 0) an odd-sized
 * piece, sometimes truncate, close. The descriptor limit is lowered so
 * that the context keeps half of the files at most (inode_keep.c): most
 * opens evict another kept file.
 *
 * The open used to take the file's size from a statx made before it
 * looked for the file's inode; when the inode left the table in between
 * (evicted, its data and exact size just written back), the new inode
 * was built from the size before that write-back: 0, or the size rounded
 * up to a block, and the writes that followed lost data on disk.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>

#include "helpers.h"

#define NR_THREADS	3
#define NR_FILES	20
#define NR_ROUNDS	300
#define MAX_LEN		65536

struct model {
	char path[256];
	int64_t size;
	uint8_t data[MAX_LEN];
};

static struct wtio_ctx *ctx;
static struct model models[NR_THREADS][NR_FILES];
static const char *dir;
static _Atomic int nr_bad;

static void *worker(void *arg)
{
	long id = (long)arg;
	uint64_t rnd = 0x9e3779b97f4a7c15ull * (uint64_t)(id + 1);
	static __thread uint8_t buf[MAX_LEN];

	for (int r = 0; r < NR_ROUNDS; r++) {
		for (int i = 0; i < NR_FILES; i++) {
			struct model *m = &models[id][i];
			struct wtio_file *f;
			int64_t size, off, len;
			ssize_t n;
			int ret;

			ret = wtio_open(ctx, m->path, O_RDWR | O_CREAT, 0600, 0,
					&f);
			CHECKF(ret == 0, "open %s: %d", m->path, ret);
			size = wtio_file_size(f);
			if (size != m->size) {
				printf("round %d %s: size %lld at reopen, %lld written\n",
				       r, m->path, (long long)size,
				       (long long)m->size);
				atomic_fetch_add(&nr_bad, 1);
				m->size = size > MAX_LEN ? MAX_LEN : size;
			}
			n = wtio_pread(f, buf, MAX_LEN, 0, 0);
			if (n != m->size || memcmp(buf, m->data, (size_t)m->size)) {
				printf("round %d %s: read %zd bytes, differs from what was written\n",
				       r, m->path, n);
				atomic_fetch_add(&nr_bad, 1);
			}
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			len = 1 + (int64_t)(rnd >> 33) % 9000;
			off = m->size + len > MAX_LEN - 4096 ? 0 : m->size;
			memset(buf, 'a' + (r + i) % 26, (size_t)len);
			CHECK_EQ(wtio_pwrite(f, buf, (size_t)len, off, 0), len);
			memcpy(m->data + off, buf, (size_t)len);
			if (off + len > m->size)
				m->size = off + len;
			if ((rnd >> 20) % 3 == 0) {
				int64_t ns = (int64_t)(rnd >> 40) % (m->size + 1);

				CHECK_OK(wtio_ftruncate(f, ns));
				memset(m->data + ns, 0, (size_t)(MAX_LEN - ns));
				m->size = ns;
			}
			CHECK_OK(wtio_close(f));
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct rlimit rl = { 64, 64 };
	struct wtio_config cfg;
	pthread_t th[NR_THREADS];
	static uint8_t disk[MAX_LEN];
	char tmpl[] = "wtio-keep-reopen.XXXXXX";
	int t, i, bad_disk = 0;

	(void)argc;
	(void)argv;
	t_watchdog(240, "FAIL: keep_reopen hung (watchdog)\n");
	t_require_odirect();
	dir = mkdtemp(tmpl);
	CHECK(dir != NULL);
	for (t = 0; t < NR_THREADS; t++)
		for (i = 0; i < NR_FILES; i++)
			snprintf(models[t][i].path, sizeof(models[t][i].path),
				 "%s/f%d.%d", dir, t, i);
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
	wtio_config_init(&cfg);
	cfg.flags |= WTIO_CONFIG_KEEP_CLOSED;
	cfg.cache_size = 4096ull * 1024;
	ctx = t_ctx_create_or_skip(&cfg);
	for (t = 0; t < NR_THREADS; t++)
		CHECK_OK(pthread_create(&th[t], NULL, worker, (void *)(long)t));
	for (t = 0; t < NR_THREADS; t++)
		CHECK_OK(pthread_join(th[t], NULL));
	CHECK_OK(wtio_ctx_destroy(ctx));
	for (t = 0; t < NR_THREADS; t++) {
		for (i = 0; i < NR_FILES; i++) {
			struct model *m = &models[t][i];
			int fd = open(m->path, O_RDONLY);
			ssize_t n;

			CHECK(fd >= 0);
			n = pread(fd, disk, MAX_LEN, 0);
			if (n != m->size || memcmp(disk, m->data, (size_t)m->size)) {
				printf("%s on disk: %zd bytes, %lld written%s\n",
				       m->path, n, (long long)m->size,
				       n == m->size ? ", data differs" : "");
				bad_disk++;
			}
			close(fd);
			unlink(m->path);
		}
	}
	rmdir(dir);
	CHECKF(atomic_load(&nr_bad) == 0 && bad_disk == 0,
	       "%d reopens saw another size or data, %d files differ on disk",
	       atomic_load(&nr_bad), bad_disk);
	printf("keep_reopen: %d threads x %d files x %d rounds, every reopen and the disk as written: PASS\n",
	       NR_THREADS, NR_FILES, NR_ROUNDS);
	return T_EXIT_PASS;
}
