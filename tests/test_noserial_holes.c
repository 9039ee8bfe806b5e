/* SPDX-License-Identifier: MIT */
/*
 * test_noserial_holes.c - NOSERIAL write-through writers filling holes of
 * a sparse file at once, while another thread fsyncs and grows the file:
 * every write is accepted whole, the cache and the disk end up holding
 * exactly what was written (zeros elsewhere), and no block outside the
 * written ranges is allocated.
 *
 * A write-through write of more than one block reserves its space first
 * (reserve.c); NOSERIAL writes inside the size do it under the shared
 * file lock with extend_lock, which is also what the size changes of
 * fsync take while they give back space past the end. Several writers
 * reserve at once, next to those size changes: a race on the reservation
 * range would lose a reservation (a block counted as allocated that is
 * not: an ENOSPC later on a full disk) or allocate outside the writes.
 * Run it under TSan too (the concurrency suite).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "helpers.h"

#define NR_WRITERS	3
#define REGION		(4u << 20)	/* each writer's part of the file */
#define MAX_LEN		(40u << 10)
#define BLK		4096u

static struct wtio_file *file;
static uint8_t *shadow;
static _Atomic int writers_left;
static uint64_t seed;
static unsigned int writes_per_writer = 400;

static void *writer(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg, i;
	struct t_rng rng = { seed * 31 + id };
	uint8_t *buf = t_malloc(MAX_LEN);
	unsigned int flags = WTIO_WRITETHROUGH | WTIO_NOSERIAL;

	for (i = 0; i < writes_per_writer; i++) {
		size_t len = 1 + (size_t)t_rand_below(&rng, MAX_LEN);
		off_t off = (off_t)id * REGION +
			    (off_t)t_rand_below(&rng, REGION - len);
		unsigned int f = flags |
				 (t_rand_below(&rng, 4) == 0 ? WTIO_DSYNC : 0);
		ssize_t n;

		t_fill(buf, len, seed + i, (uint64_t)off);
		n = wtio_pwrite(file, buf, len, off, f);
		CHECKF(n == (ssize_t)len,
		       "writer %u: NOSERIAL write of %zu at %lld into a hole: %zd",
		       id, len, (long long)off, n);
		/* The regions are disjoint: no other thread writes here. */
		memcpy(shadow + off, buf, len);
	}
	free(buf);
	atomic_fetch_sub(&writers_left, 1);
	return NULL;
}

/* fsync (the exact size, given back past it under extend_lock) and a
 * growing truncate past every writer's region, in turn. */
static void *sizer(void *arg)
{
	off_t size = (off_t)(uintptr_t)arg;

	while (atomic_load(&writers_left)) {
		CHECK_OK(wtio_fsync(file));
		size += 3 * BLK + 17;
		CHECK_OK(wtio_ftruncate(file, size));
	}
	return (void *)(uintptr_t)size;
}

int main(int argc, char **argv)
{
	const size_t base = (size_t)NR_WRITERS * REGION;
	const char *path = t_tmpfile("noserial-holes");
	size_t size, dlen, i;
	uint8_t *d, *got;
	pthread_t t[NR_WRITERS + 1];
	struct wtio_ctx *ctx;
	struct stat st;
	uint64_t touched = 0;
	void *ret;
	int fd;

	seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x5eed;
	if (argc > 2)
		writes_per_writer = (unsigned int)strtoul(argv[2], NULL, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	t_watchdog(200, "FAIL: NOSERIAL writers into holes hung\n");
	t_require_odirect();
	/* A sparse file made by the kernel: all holes. */
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)base) == 0);
	close(fd);
	/* Room for the growing truncates too. */
	shadow = t_zalloc(base + (64u << 20));
	ctx = t_ctx(BLK, 512, WTIO_BACKEND_AUTO);
	file = t_open(ctx, path, O_RDWR);
	atomic_store(&writers_left, NR_WRITERS);
	for (i = 0; i < NR_WRITERS; i++)
		CHECK_OK(pthread_create(&t[i], NULL, writer,
					(void *)(uintptr_t)i));
	CHECK_OK(pthread_create(&t[NR_WRITERS], NULL, sizer,
				(void *)(uintptr_t)base));
	for (i = 0; i < NR_WRITERS; i++)
		CHECK_OK(pthread_join(t[i], NULL));
	CHECK_OK(pthread_join(t[NR_WRITERS], &ret));
	size = (size_t)(uintptr_t)ret;
	CHECK(size < base + (64u << 20));
	CHECK_EQ(wtio_file_size(file), (long long)size);
	got = t_malloc(size);
	CHECK_EQ(wtio_pread(file, got, size, 0, 0), (long long)size);
	CHECKF(t_memdiff(got, shadow, size) < 0,
	       "seed %#llx: the cache differs from what was written at %lld",
	       (unsigned long long)seed, t_memdiff(got, shadow, size));
	CHECK_OK(wtio_close(file));
	CHECK_OK(wtio_ctx_destroy(ctx));
	d = t_read_disk(path, &dlen);
	CHECKF(dlen == size, "disk size %zu, want %zu", dlen, size);
	CHECKF(t_memdiff(d, shadow, size) < 0,
	       "seed %#llx: the disk differs from what was written at %lld",
	       (unsigned long long)seed, t_memdiff(d, shadow, size));
	/* Blocks holding a written byte; t_fill never writes a zero. */
	for (i = 0; i < size; i += BLK) {
		size_t j, e = i + BLK < size ? i + BLK : size;

		for (j = i; j < e && !shadow[j]; j++)
			;
		touched += j < e;
	}
	CHECK_OK(stat(path, &st));
	/* The filesystem's block may be larger than ours: then allow a
	 * whole one of its blocks per written block. The extent tree's own
	 * blocks count too (ext4: a leaf per 340 extents): 1% and 64 KiB,
	 * far below a chunk reserved ahead (1 MiB) or a range allocated
	 * between two writes. */
	CHECKF((uint64_t)st.st_blocks * 512 <=
	       touched * (st.st_blksize > BLK ? (uint64_t)st.st_blksize : BLK) *
	       101 / 100 + (64u << 10),
	       "seed %#llx: %llu bytes allocated for %llu written blocks: space reserved outside the writes",
	       (unsigned long long)seed, (unsigned long long)st.st_blocks * 512,
	       (unsigned long long)touched);
	printf("noserial_holes: %d writers x %u writes into holes, seed %#llx, %llu blocks written, %llu allocated: ok\n",
	       NR_WRITERS, writes_per_writer, (unsigned long long)seed,
	       (unsigned long long)touched,
	       (unsigned long long)st.st_blocks * 512 / BLK);
	free(got);
	free(d);
	free(shadow);
	unlink(path);
	return T_EXIT_PASS;
}
