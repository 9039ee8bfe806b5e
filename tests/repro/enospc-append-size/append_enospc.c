#define _GNU_SOURCE
#include <wtio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <sys/stat.h>
static struct wtio_ctx *ctx; static struct wtio_file *F; static _Atomic int64_t tail; static _Atomic long bad, done_w;
static int per = 2000; static int logfd = -1; static pthread_mutex_t lk = PTHREAD_MUTEX_INITIALIZER;
static void logack(uint64_t ud, int64_t res) { if (logfd < 0 || res <= 0) return; char l[64]; int n = snprintf(l, sizeof l, "%lu %lu\n", (unsigned long)(ud >> 20), (unsigned long)(ud & 0xfffff)); pthread_mutex_lock(&lk); if (write(logfd, l, n) != n) abort(); pthread_mutex_unlock(&lk); } static unsigned flags;
static unsigned char pat(int64_t o) { return (unsigned char)((o * 7 + o / 4096) % 253 + 1); }
static void *worker(void *a) {
	int id = (int)(uintptr_t)a; unsigned seed = id * 13 + 1; struct wtio_queue *q;
	if (wtio_queue_create(ctx, 32, &q)) { atomic_fetch_add(&bad, 1); return NULL; }
	char *bufs[32]; for (int i = 0; i < 32; i++) bufs[i] = malloc(70000);
	int slot = 0; struct wtio_cqe cq[32];
	for (int n = 0; n < per; n++) {
		size_t len = 1 + rand_r(&seed) % 9000;
		int64_t off = atomic_fetch_add(&tail, (int64_t)len);
		char *b = bufs[slot]; slot = (slot + 1) % 32;
		for (size_t i = 0; i < len; i++) b[i] = (char)pat(off + (int64_t)i);
		int r;
		while ((r = wtio_queue_pwrite(q, F, b, len, off, flags, ((uint64_t)off << 20) | len)) == -EAGAIN) {
			int got = wtio_queue_reap(q, cq, 32, 1 + rand_r(&seed) % 8, -1);
			for (int i = 0; i < got; i++) if (logack(cq[i].user_data, cq[i].res), cq[i].res != (int64_t)(cq[i].user_data & 0xfffff)) { fprintf(stderr, "cqe res %ld want %lu\n", (long)cq[i].res, cq[i].user_data); atomic_fetch_add(&bad, 1); }
		}
		if (r) { fprintf(stderr, "submit %d\n", r); atomic_fetch_add(&bad, 1); break; }
		// keep buffers valid: only 32 slots; the queue depth is 32 so the reap above guarantees reuse safety? reap when inflight==32
		if (wtio_queue_inflight(q) >= 31) {
			int got = wtio_queue_reap(q, cq, 32, 32 - 1, -1);
			for (int i = 0; i < got; i++) if (logack(cq[i].user_data, cq[i].res), cq[i].res != (int64_t)(cq[i].user_data & 0xfffff)) { fprintf(stderr, "cqe res %ld\n", (long)cq[i].res); atomic_fetch_add(&bad, 1); }
		}
		if (rand_r(&seed) % 500 == 0) { // destroy with I/O in flight, recreate
			wtio_queue_destroy(q); if (wtio_queue_create(ctx, 32, &q)) { atomic_fetch_add(&bad, 1); return NULL; }
		}
	}
	int got; while (wtio_queue_inflight(q) && (got = wtio_queue_reap(q, cq, 32, 1, -1)) > 0)
		for (int i = 0; i < got; i++) if (logack(cq[i].user_data, cq[i].res), cq[i].res != (int64_t)(cq[i].user_data & 0xfffff)) { fprintf(stderr, "cqe res %ld\n", (long)cq[i].res); atomic_fetch_add(&bad, 1); }
	wtio_queue_destroy(q);
	return NULL;
}
int main(int argc, char **argv) {
	int T = atoi(argv[2]); flags = strtoul(argv[3], 0, 0); uint64_t cache = strtoull(argv[4], 0, 0);
	if (getenv("LOG")) logfd = open(getenv("LOG"), O_WRONLY|O_CREAT|O_TRUNC|O_APPEND, 0644);
	struct wtio_config cfg; wtio_config_init(&cfg); cfg.cache_size = cache;
	if (getenv("BACKEND")) cfg.backend = atoi(getenv("BACKEND"));
	if (getenv("SIZE_AHEAD")) cfg.flags |= WTIO_CONFIG_SIZE_AHEAD;
	if (wtio_ctx_create(&cfg, &ctx)) return 2;
	if (wtio_open(ctx, argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644, 0, &F)) return 2;
	pthread_t th[8]; for (int i = 0; i < T; i++) pthread_create(&th[i], 0, worker, (void *)(uintptr_t)i);
	// meanwhile fsync sometimes
	for (int i = 0; i < 50; i++) { usleep(20000); wtio_fdatasync(F); }
	for (int i = 0; i < T; i++) pthread_join(th[i], 0);
	int64_t sz = wtio_file_size(F);
	int c = wtio_close(F); wtio_ctx_destroy(ctx);
	struct stat st; stat(argv[1], &st);
	if (st.st_size != tail || sz != tail) { printf("SIZE wrong: disk %ld wtio %ld want %ld\n", (long)st.st_size, (long)sz, (long)tail); bad++; }
	int fd = open(argv[1], O_RDONLY); char *b = malloc(tail + 1); ssize_t g = pread(fd, b, tail, 0);
	for (int64_t i = 0; i < g; i++) if ((unsigned char)b[i] != pat(i)) { printf("BAD at %ld: %u want %u\n", (long)i, (unsigned char)b[i], pat(i)); bad++; break; }
	printf("size %ld close %d bad %ld\n", (long)tail, c, bad); return bad ? 1 : 0;
}
