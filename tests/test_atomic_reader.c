/* SPDX-License-Identifier: MIT */
/*
 * test_atomic_reader.c - readers of the cache never see a torn atomic
 * write.
 *
 * On an XFS image on a loop device (root, loop devices and xfsprogs
 * needed; skipped with the reason otherwise), a writer thread alternates
 * WTIO_ATOMIC writes of all-'A' and all-'B' over one range while reader
 * threads hammer it with wtio_pread (exactly the range, a larger range
 * around it, and DONTCACHE reads that send folios back to the disk). Each
 * read must see the range all 'A' or all 'B'. Folio sizes 4 KiB (the
 * range spans 16 folios), 64 KiB (4 folios) and 1 MiB (inside one folio),
 * about 2 s in all.
 */
#include "helpers.h"
#include "xfs_loop.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define NREADERS 3

struct shared {
	struct wtio_file *f;
	off_t off;
	size_t len;
	atomic_bool stop;
	atomic_ullong writes, reads, seen_a, seen_b;
	atomic_int failed;
};

static void *writer(void *arg)
{
	struct shared *s = arg;
	uint8_t *a = t_malloc(s->len), *b = t_malloc(s->len);
	uint64_t i = 0;

	memset(a, 'A', s->len);
	memset(b, 'B', s->len);
	while (!atomic_load(&s->stop)) {
		ssize_t r = wtio_pwrite(s->f, (i & 1) ? b : a, s->len, s->off,
					WTIO_ATOMIC);

		if (r != (ssize_t)s->len) {
			fprintf(stderr, "FAIL: atomic write returned %zd\n", r);
			atomic_store(&s->failed, 1);
			break;
		}
		i++;
		atomic_fetch_add(&s->writes, 1);
	}
	free(a);
	free(b);
	return NULL;
}

struct reader_arg {
	struct shared *s;
	int kind;
};

static void *reader(void *arg)
{
	struct reader_arg *ra = arg;
	struct shared *s = ra->s;
	size_t pad = ra->kind == 1 ? 8192 : 0;
	unsigned int flags = ra->kind == 2 ? WTIO_DONTCACHE : 0;
	uint8_t *buf = t_malloc(s->len + 2 * pad);

	while (!atomic_load(&s->stop) && !atomic_load(&s->failed)) {
		ssize_t r = wtio_pread(s->f, buf, s->len + 2 * pad,
				       s->off - (off_t)pad, flags);
		const uint8_t *p = buf + pad;
		size_t i;

		if (r != (ssize_t)(s->len + 2 * pad)) {
			fprintf(stderr, "FAIL: pread returned %zd\n", r);
			atomic_store(&s->failed, 1);
			break;
		}
		if (p[0] != 'A' && p[0] != 'B') {
			fprintf(stderr, "FAIL: byte 0 of the range is %02x\n",
				p[0]);
			atomic_store(&s->failed, 1);
			break;
		}
		for (i = 1; i < s->len; i++) {
			if (p[i] != p[0]) {
				fprintf(stderr, "FAIL: torn read: byte 0 '%c', "
					"byte %zu '%c' (reader kind %d)\n", p[0],
					i, p[i], ra->kind);
				atomic_store(&s->failed, 1);
				break;
			}
		}
		atomic_fetch_add(p[0] == 'A' ? &s->seen_a : &s->seen_b, 1);
		atomic_fetch_add(&s->reads, 1);
	}
	free(buf);
	return NULL;
}

static void hammer(const char *path, uint32_t fsz, off_t off, size_t len,
		   uint64_t ms)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	struct shared s = { 0 };
	struct reader_arg ra[NREADERS];
	pthread_t w, r[NREADERS];
	uint8_t *init = t_malloc(len);
	uint64_t t0;
	int i;

	wtio_config_init(&cfg);
	cfg.folio_size = fsz;
	cfg.cache_size = fsz < 65536 ? (4u << 20) : 32u * fsz;
	ctx = t_ctx_create(&cfg);
	s.f = t_open(ctx, path, O_RDWR);
	s.off = off;
	s.len = len;
	memset(init, 'A', len);
	CHECK_EQ(wtio_pwrite(s.f, init, len, off, 0), (long long)len);
	CHECK_OK(wtio_fsync(s.f));

	CHECK_OK(pthread_create(&w, NULL, writer, &s));
	for (i = 0; i < NREADERS; i++) {
		ra[i].s = &s;
		ra[i].kind = i;
		CHECK_OK(pthread_create(&r[i], NULL, reader, &ra[i]));
	}
	t0 = t_now_ms();
	/* Run for ms, and on a loaded machine on until enough was done to
	 * mean something (the check below then fails only if the threads
	 * are stuck for a minute, not slow). */
	while (!atomic_load(&s.failed) && t_now_ms() - t0 < 60000 &&
	       (t_now_ms() - t0 < ms || atomic_load(&s.writes) <= 10 ||
		atomic_load(&s.reads) <= 10))
		usleep(10000);
	atomic_store(&s.stop, true);
	pthread_join(w, NULL);
	for (i = 0; i < NREADERS; i++)
		pthread_join(r[i], NULL);
	CHECK(!atomic_load(&s.failed));
	CHECKF(atomic_load(&s.writes) > 10 && atomic_load(&s.reads) > 10,
	       "too little done: %llu writes, %llu reads",
	       (unsigned long long)atomic_load(&s.writes),
	       (unsigned long long)atomic_load(&s.reads));
	printf("folio %4uK, atomic %3zuK @ %lldK: %llu atomic writes, %llu "
	       "reads (%llu all-A, %llu all-B), never torn\n", fsz >> 10,
	       len >> 10, (long long)off >> 10,
	       (unsigned long long)atomic_load(&s.writes),
	       (unsigned long long)atomic_load(&s.reads),
	       (unsigned long long)atomic_load(&s.seen_a),
	       (unsigned long long)atomic_load(&s.seen_b));
	CHECK_OK(wtio_close(s.f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	free(init);
}

int main(void)
{
	char path[256];
	int fd, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = xl_setup("atomic-reader", "-d su=64k,sw=4");
	if (ret == XL_SKIP)
		t_skip("%s", xl.why);
	CHECKF(ret == XL_OK, "%s", xl.why);
	xl_path(path, sizeof(path), "hammer");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_OK(ftruncate(fd, 4u << 20));
	close(fd);

	hammer(path, 4096, 65536, 65536, 700);
	hammer(path, 65536, 262144, 262144, 700);
	hammer(path, 1u << 20, (1u << 20) + 16384, 16384, 700);

	unlink(path);
	CHECKF(xl_umount() == XL_OK, "%s", xl.why);
	xl_cleanup();
	printf("PASS\n");
	return T_EXIT_PASS;
}
