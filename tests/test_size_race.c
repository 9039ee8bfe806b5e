/* SPDX-License-Identifier: MIT */
/*
 * test_size_race.c - several threads on one file of an XFS image: owners
 * of regions writing in random modes, a tail thread writing (TMODE) and
 * truncating past them, optional sync threads; every region and the tail
 * are checked against shadows during the run and, at the end, in the
 * backing file. Found a bound on the disk size (disk_size_lb) raised
 * past the real end by a write completing after a shrink: later
 * extending writes skipped the size gate and XFS zeroed their bytes.
 * Usage: test_size_race PATH [folio [secs [backend [cache [region]]]]]
 * (env NWR, NSY, TMODE, WMODE); run by size-race.sh on an XFS image.
 */
#include <wtio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <stdint.h>
#include <stdatomic.h>
#include <time.h>

#define NW 6
static size_t REG;   /* bytes per owned region */
static size_t L;     /* NW * REG */
static struct wtio_ctx *ctx;
static struct wtio_file *f;
static const char *path;
static unsigned char *shadow[NW + 1];
static size_t tail_size; /* tail shadow length (bytes past L) */
static atomic_int stop;
static int secs = 5;
static unsigned modes[] = {0, WTIO_WRITETHROUGH, WTIO_WRITETHROUGH | WTIO_NOSERIAL,
	WTIO_DSYNC, WTIO_DONTCACHE, WTIO_WRITETHROUGH | WTIO_DSYNC,
	WTIO_WRITETHROUGH | WTIO_DONTCACHE, WTIO_DSYNC | WTIO_DONTCACHE,
	WTIO_WRITETHROUGH | WTIO_NOSERIAL | WTIO_DONTCACHE};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

static void die(const char *m, long v)
{
	fprintf(stderr, "FAIL: %s (%ld)\n", m, v);
	exit(1);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
	return *s;
}

static void *writer(void *arg)
{
	long id = (long)arg;
	uint64_t s = 0x9e3779b97f4a7c15ull * (id + 1);
	unsigned char *buf = malloc(REG), *rb = malloc(REG);
	unsigned char *sh = shadow[id];
	off_t base = id * REG;
	unsigned n = 0;

	while (!atomic_load(&stop)) {
		size_t off = rnd(&s) % REG;
		size_t len = 1 + rnd(&s) % (REG - off);
		if (rnd(&s) % 4)
			len = 1 + rnd(&s) % (len < 20000 ? len : 20000);
		unsigned fl = modes[rnd(&s) % NMODES];
		if (getenv("WMODE")) fl = strtoul(getenv("WMODE"), 0, 0);
		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)(rnd(&s) | 1);
		ssize_t r;
		if (rnd(&s) % 3 == 0) {
			struct iovec iov[3];
			size_t a = len / 3, b = len / 3;
			iov[0] = (struct iovec){buf, a};
			iov[1] = (struct iovec){buf + a, b};
			iov[2] = (struct iovec){buf + a + b, len - a - b};
			r = wtio_pwritev(f, iov, 3, base + off, fl);
		} else
			r = wtio_pwrite(f, buf, len, base + off, fl);
		if (r != (ssize_t)len) die("write", r);
		memcpy(sh + off, buf, len);
		/* read back own range */
		size_t roff = rnd(&s) % REG, rlen = 1 + rnd(&s) % (REG - roff);
		unsigned rf = (rnd(&s) % 4 == 0) ? WTIO_DONTCACHE : 0;
		r = wtio_pread(f, rb, rlen, base + roff, rf);
		if (r != (ssize_t)rlen) die("read", r);
		if (memcmp(rb, sh + roff, rlen)) {
			size_t i = 0;
			while (rb[i] == sh[roff + i]) i++;
			fprintf(stderr, "writer %ld: mismatch at %zu (region off %zu) got %02x want %02x iter %u\n",
				id, base + roff + i, roff + i, rb[i], sh[roff + i], n);
			exit(1);
		}
		n++;
	}
	free(buf); free(rb);
	return NULL;
}

/* the tail: [L, L + REG) with truncates */
struct hop { int op; size_t a, b; unsigned fl; size_t sz; };
static struct hop hist[64]; static unsigned nh;
static void *tailer(void *arg)
{
	(void)arg;
	uint64_t s = 777;
	unsigned char *buf = malloc(REG), *rb = malloc(REG);
	unsigned char *sh = shadow[NW];
	while (!atomic_load(&stop)) {
		unsigned op = rnd(&s) % 10;
		if (op < 3 && !getenv("NOTRUNC")) {
			size_t ns = rnd(&s) % REG;
			int r = wtio_ftruncate(f, L + ns);
			if (r) die("truncate", r);
			if (ns > tail_size) memset(sh + tail_size, 0, ns - tail_size);
			tail_size = ns;
			hist[nh++ % 64] = (struct hop){0, ns, 0, 0, tail_size};
		} else {
			size_t off = rnd(&s) % REG;
			size_t len = 1 + rnd(&s) % (REG - off);
			unsigned fl = modes[rnd(&s) % NMODES];
			if (getenv("TMODE")) fl = strtoul(getenv("TMODE"), 0, 0);
			if (getenv("NOTRUNC") && off > tail_size) off = tail_size;
			if (off + len > REG)
				len = REG - off;
			if (!len)
				continue;
			for (size_t i = 0; i < len; i++)
				buf[i] = (unsigned char)(rnd(&s) | 1);
			ssize_t r = wtio_pwrite(f, buf, len, L + off, fl);
			if (r != (ssize_t)len) die("tail write", r);
			if (off > tail_size) memset(sh + tail_size, 0, off - tail_size);
			memcpy(sh + off, buf, len);
			if (off + len > tail_size) tail_size = off + len;
			hist[nh++ % 64] = (struct hop){1, off, len, fl, tail_size};
		}
		struct wtio_file_info fi;
		/* size check via read past */
		ssize_t r = wtio_pread(f, rb, REG, L, 0);
		if (r != (ssize_t)tail_size) die("tail size", r);
		if (memcmp(rb, sh, tail_size)) {
			size_t i = 0;
			while (rb[i] == sh[i]) i++;
			size_t j = i; while (j < tail_size && rb[j] != sh[j]) j++;
			fprintf(stderr, "tail mismatch at %zu..%zu got %02x want %02x size %zu (L=%zu)\n", i, j, rb[i], sh[i], tail_size, L);
			for (unsigned k = nh > 20 ? nh - 20 : 0; k < nh; k++) { struct hop *h = &hist[k % 64];
				if (h->op) fprintf(stderr, "  write %zu+%zu fl %#x -> size %zu\n", h->a, h->b, h->fl, h->sz);
				else fprintf(stderr, "  trunc %zu\n", h->a); }
			usleep(100000);
			r = wtio_pread(f, rb, REG, L, 0);
			fprintf(stderr, "reread: %zd, %s\n", r, memcmp(rb, sh, tail_size) ? "still bad" : "now good");
			{ int fd = open(path, O_RDONLY); off_t ds = lseek(fd, 0, SEEK_END); unsigned char *d = malloc(REG);
			  ssize_t k = pread(fd, d, REG, L); fprintf(stderr, "disk size %ld (want %zu), disk tail read %zd, disk %s at %zu\n", (long)ds, L + tail_size, k, k > (ssize_t)i && d[i] == sh[i] ? "good" : "bad", i); }
			exit(1);
		}
		(void)fi;
	}
	free(buf); free(rb);
	return NULL;
}

static void *syncer(void *arg)
{
	long id = (long)arg;
	uint64_t s = 4242 + id;
	while (!atomic_load(&stop)) {
		int r;
		switch (rnd(&s) % 5) {
		case 0: r = wtio_fsync(f); break;
		case 1: r = wtio_fdatasync(f); break;
		case 2: r = wtio_sync_range(f, rnd(&s) % L, rnd(&s) % L,
				WTIO_SYNC_RANGE_WRITE); break;
		case 3: r = wtio_sync_range(f, rnd(&s) % L, 0,
				WTIO_SYNC_RANGE_WAIT_BEFORE | WTIO_SYNC_RANGE_WRITE |
				WTIO_SYNC_RANGE_WAIT_AFTER); break;
		default: {
			struct wtio_file *g;
			r = wtio_open(ctx, path, O_RDWR, 0, 0, &g);
			if (r) die("open2", r);
			unsigned char b[4096];
			ssize_t x = wtio_pread(g, b, sizeof b, rnd(&s) % L, 0);
			if (x < 0) die("read2", x);
			r = wtio_close(g);
		}
		}
		if (r) die("sync", r);
		usleep(rnd(&s) % 2000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	path = argv[1];
	uint32_t folio = argc > 2 ? atoi(argv[2]) : 4096;
	secs = argc > 3 ? atoi(argv[3]) : 5;
	int backend = argc > 4 ? atoi(argv[4]) : 0;
	uint64_t cache = argc > 5 ? strtoull(argv[5], 0, 0) : 16ull * folio;
	REG = argc > 6 ? strtoull(argv[6], 0, 0) : 3 * folio + 1234;
	L = NW * REG;
	for (int i = 0; i <= NW; i++) shadow[i] = calloc(1, REG);
	struct wtio_config cfg;
	wtio_config_init(&cfg);
	cfg.folio_size = folio;
	cfg.cache_size = cache;
	cfg.backend = backend;
	cfg.dirty_expire_ms = 10;
	cfg.writeback_interval_ms = 5;
	int r = wtio_ctx_create(&cfg, &ctx);
	if (r) die("ctx", r);
	unlink(path);
	r = wtio_open(ctx, path, O_RDWR | O_CREAT, 0644, 0, &f);
	if (r) die("open", r);
	r = wtio_ftruncate(f, L);
	if (r) die("trunc0", r);
	pthread_t t[NW + 3];
	int nw = getenv("NWR") ? atoi(getenv("NWR")) : NW;
	int ns = getenv("NSY") ? atoi(getenv("NSY")) : 2;
	if (nw < 0 || nw > NW || ns < 0 || ns > 2) {
		fprintf(stderr, "NWR must be 0..%d and NSY 0..2 (got %d, %d)\n",
			NW, nw, ns);
		return 1;
	}
	for (long i = 0; i < nw; i++) pthread_create(&t[i], 0, writer, (void *)i);
	pthread_create(&t[NW], 0, tailer, 0);
	for (long i = 0; i < ns; i++) pthread_create(&t[NW + 1 + i], 0, syncer, (void *)(i + 1));
	sleep(secs);
	atomic_store(&stop, 1);
	for (int i = 0; i < nw; i++) pthread_join(t[i], 0);
	for (int i = 0; i < ns + 1; i++) pthread_join(t[NW + i], 0);
	r = wtio_close(f);
	if (r) die("close", r);
	r = wtio_ctx_destroy(ctx);
	if (r) die("destroy", r);
	/* the backing file */
	int fd = open(path, O_RDONLY);
	off_t sz = lseek(fd, 0, SEEK_END);
	if (sz != (off_t)(L + tail_size)) die("final size", sz);
	unsigned char *all = malloc(sz);
	if (pread(fd, all, sz, 0) != sz) die("final read", 0);
	for (int i = 0; i < NW; i++)
		if (memcmp(all + i * REG, shadow[i], REG)) {
			size_t k = 0;
			while (all[i * REG + k] == shadow[i][k]) k++;
			die("final region mismatch at", i * REG + k);
		}
	if (memcmp(all + L, shadow[NW], tail_size)) die("final tail", 0);
	free(all);
	close(fd);
	for (int i = 0; i <= NW; i++)
		free(shadow[i]);
	printf("ok folio %u cache %llu backend %d\n", folio, (unsigned long long)cache, backend);
	return 0;
}
