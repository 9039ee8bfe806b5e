/* SPDX-License-Identifier: MIT */
/*
 * test_raid.c - the user-space RAID keeps its promises: parity right after
 * random writes of random sizes from several threads sharing stripes, a
 * full-stripe write reads nothing and a small one pays its read-modify-
 * write, a discard of any range reads zeros, and one (RAID-5) or two
 * (RAID-6) members dropped - deleted or zeroed - read back through parity
 * and rebuild to every byte.
 *
 *   test_raid [SEED] [DIR]     (SEED also from WTIO_RAID_SEED; DIR from
 *                              WTIO_RAID_DIR, default /dev/shm)
 * Exit 0 pass, 1 fail, 77 skip.
 */
#include "raid.h"
#include "raid_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 4
#define SPAN_STRIPES 40

struct tctx {
	struct raid_vol *v;
	uint8_t *shadow;
	uint64_t span, seed;
	unsigned int t;
	int err;
};

static void fill(uint8_t *p, size_t len, uint64_t *seed)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t r = rnd(seed);

		memcpy(p + i, &r, 8);
	}
}

/* Thread t owns slice t of every stripe: threads share stripes (and so
 * parity) without sharing bytes, so the result is known. */
static void *writer(void *arg)
{
	struct tctx *tc = arg;
	uint64_t w = raid_stripe_width(tc->v), slice = w / NTHREADS;
	uint64_t seed = tc->seed;
	uint8_t *buf = malloc(slice);
	int i;

	for (i = 0; i < 400 && buf; i++) {
		uint64_t s = rnd(&seed) % SPAN_STRIPES;
		uint64_t secs = slice / RAID_SECTOR;
		uint64_t a = rnd(&seed) % secs;
		uint64_t n = 1 + rnd(&seed) % (secs - a);
		uint64_t off = s * w + tc->t * slice + a * RAID_SECTOR;
		size_t len = n * RAID_SECTOR;
		ssize_t r;

		fill(buf, len, &seed);
		r = raid_pwrite(tc->v, buf, len, off);
		if (r != (ssize_t)len) {
			tc->err = r < 0 ? (int)r : -EIO;
			break;
		}
		memcpy(tc->shadow + off, buf, len);
	}
	free(buf);
	return NULL;
}

static int compare_all(struct raid_vol *v, const uint8_t *shadow,
		       uint64_t span, const char *what)
{
	uint8_t *buf = malloc(span);
	ssize_t r;
	uint64_t i;

	CHECK(buf, "malloc");
	r = raid_pread(v, buf, span, 0);
	if (r != (ssize_t)span) {
		free(buf);
		CHECK(0, "%s: read of the volume returned %zd", what, r);
	}
	for (i = 0; i < span && buf[i] == shadow[i]; i++)
		;
	free(buf);
	CHECK(i == span, "%s: byte %" PRIu64 " differs", what, i);
	return 0;
}

static uint64_t total(const struct raid_member_stats *ms, unsigned int n,
		      int reads)
{
	uint64_t t = 0;
	unsigned int k;

	for (k = 0; k < n; k++)
		t += reads ? ms[k].reads : ms[k].writes;
	return t;
}

/* A full stripe reads nothing; one sector pays RMW or RCW reads. */
static int check_costs(struct raid_vol *v, uint8_t *shadow, uint64_t *seed)
{
	unsigned int n = raid_disks(v), nd = raid_data_disks(v);
	unsigned int np = n - nd;
	uint64_t w = raid_stripe_width(v);
	struct raid_member_stats ms[RAID_MAX_DISKS];
	struct raid_vol_stats vs;
	uint8_t *buf = malloc(w);
	uint64_t s = rnd(seed) % SPAN_STRIPES;

	CHECK(buf, "malloc");
	fill(buf, w, seed);
	raid_stats_reset(v);
	CHECK(raid_pwrite(v, buf, w, s * w) == (ssize_t)w, "full stripe");
	memcpy(shadow + s * w, buf, w);
	raid_stats(v, ms, &vs);
	CHECK(total(ms, n, 1) == 0 && total(ms, n, 0) == n &&
	      vs.full_stripe_writes == 1,
	      "full stripe: %" PRIu64 " reads, %" PRIu64 " writes",
	      total(ms, n, 1), total(ms, n, 0));

	raid_stats_reset(v);
	CHECK(raid_pwrite(v, buf, RAID_SECTOR, s * w + RAID_SECTOR) ==
	      RAID_SECTOR, "one sector");
	memcpy(shadow + s * w + RAID_SECTOR, buf, RAID_SECTOR);
	raid_stats(v, ms, &vs);
	/* One data chunk: RMW reads 1 + np, RCW nd - 1; ties go to RCW. */
	{
		uint64_t want = 1 + np < nd - 1 ? 1 + np : nd - 1;

		CHECK(total(ms, n, 1) == want && total(ms, n, 0) == 1 + np &&
		      vs.rmw_rows + vs.rcw_rows == 1 &&
		      vs.partial_stripe_writes == 1,
		      "one sector: %" PRIu64 " reads (want %" PRIu64 "), %"
		      PRIu64 " writes", total(ms, n, 1), want,
		      total(ms, n, 0));
		printf("  one-sector write: %" PRIu64 " member reads (%s), %"
		       PRIu64 " writes; full stripe: 0 reads, %u writes\n",
		       want, vs.rmw_rows ? "read-modify-write" :
		       "reconstruct-write", total(ms, n, 0), n);
	}
	free(buf);
	return 0;
}

/* Drop members (the even ones deleted, the odd ones zeroed), read through
 * parity, rebuild, and check every byte and the parity. */
static int check_drop(struct raid_vol *v, const uint8_t *shadow,
		      uint64_t span, uint64_t *seed)
{
	unsigned int n = raid_disks(v), np = n - raid_data_disks(v);
	unsigned int drop[2], i;
	uint8_t sec[RAID_SECTOR] = { 0 };

	drop[0] = (unsigned int)(rnd(seed) % n);
	drop[1] = (drop[0] + 1 + (unsigned int)(rnd(seed) % (n - 1))) % n;
	for (i = 0; i < np; i++) {
		const char *path = raid_member_path(v, drop[i]);

		CHECK(raid_fail_member(v, drop[i]) == 0, "fail %u", drop[i]);
		if (drop[i] % 2 == 0) {
			CHECK(unlink(path) == 0, "unlink %s", path);
		} else {
			int fd = open(path, O_WRONLY | O_TRUNC);

			CHECK(fd >= 0, "zero %s", path);
			close(fd);
		}
	}
	if (np > 1)
		printf("  dropped members %u and %u\n", drop[0], drop[1]);
	else
		printf("  dropped member %u\n", drop[0]);
	if (compare_all(v, shadow, span, "degraded read"))
		return -1;
	CHECK(raid_pwrite(v, sec, RAID_SECTOR, 0) == -EIO,
	      "a degraded write is refused");
	CHECK(raid_rebuild(v) == 0, "rebuild");
	CHECK(raid_verify(v, NULL) == 0, "parity after rebuild");
	return compare_all(v, shadow, span, "after rebuild");
}

static int run_one(const char *dir, int level, unsigned int n,
		   uint32_t chunk, uint64_t seed)
{
	struct raid_vol *v;
	pthread_t th[NTHREADS];
	struct tctx tc[NTHREADS];
	uint64_t w, span, first_bad = 0, s2 = seed;
	uint8_t *shadow, *buf;
	char prefix[64];
	long bad;
	int ret, i;

	snprintf(prefix, sizeof(prefix), "test-raid.%d", (int)getpid());
	ret = raid_create(dir, prefix, level, n, chunk, &v);
	if (ret == -EACCES || ret == -EROFS || ret == -ENOENT)
		return 77;
	CHECK(ret == 0, "raid_create: %s", strerror(-ret));
	printf("RAID-%d, %u members, chunk %u%s\n", level, n, chunk,
	       raid_direct(v) ? " (O_DIRECT members)" : " (buffered members)");
	w = raid_stripe_width(v);
	span = w * SPAN_STRIPES;
	shadow = calloc(1, span);
	buf = malloc(3 * w);
	if (!shadow || !buf)
		goto fail;

	/* Several threads on shared stripes. */
	for (i = 0; i < NTHREADS; i++) {
		tc[i] = (struct tctx){ .v = v, .shadow = shadow, .span = span,
				       .seed = seed + 1000u * (unsigned)i + 1,
				       .t = (unsigned int)i };
		pthread_create(&th[i], NULL, writer, &tc[i]);
	}
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		if (tc[i].err) {
			fprintf(stderr, "FAIL: writer %d: %s\n", i,
				strerror(-tc[i].err));
			raid_test_failures++;
			goto fail;
		}
	}
	bad = raid_verify(v, &first_bad);
	if (bad) {
		fprintf(stderr, "FAIL: %ld stripes with bad parity after "
			"threaded writes (first %" PRIu64 ")\n", bad, first_bad);
		raid_test_failures++;
		goto fail;
	}
	/* One thread, any size up to 3 stripes, any alignment. */
	for (i = 0; i < 300; i++) {
		uint64_t secs = span / RAID_SECTOR;
		uint64_t a = rnd(&s2) % secs;
		uint64_t max = 3 * w / RAID_SECTOR;
		uint64_t len = (1 + rnd(&s2) % max) * RAID_SECTOR;
		ssize_t r;

		if (a * RAID_SECTOR + len > span)
			len = span - a * RAID_SECTOR;
		/* Now and then a whole, aligned stripe or two. */
		if (i % 7 == 0) {
			a = (rnd(&s2) % (SPAN_STRIPES - 2)) * (w / RAID_SECTOR);
			len = (1 + rnd(&s2) % 2) * w;
		}
		fill(buf, len, &s2);
		r = raid_pwrite(v, buf, len, a * RAID_SECTOR);
		if (r != (ssize_t)len) {
			fprintf(stderr, "FAIL: write %" PRIu64 "+%" PRIu64
				": %zd\n", a * RAID_SECTOR, len, r);
			raid_test_failures++;
			goto fail;
		}
		memcpy(shadow + a * RAID_SECTOR, buf, len);
	}
	if (check_costs(v, shadow, &s2))
		goto fail;
	bad = raid_verify(v, &first_bad);
	if (bad || compare_all(v, shadow, span, "after random writes")) {
		if (bad) {
			fprintf(stderr, "FAIL: %ld stripes with bad parity "
				"(first %" PRIu64 ")\n", bad, first_bad);
			raid_test_failures++;
		}
		goto fail;
	}
	/* A discard of any byte range: zeros there, parity still right. */
	{
		uint64_t a = rnd(&s2) % (span / 2), len = rnd(&s2) % (span / 2);

		if (raid_discard(v, a, len)) {
			fprintf(stderr, "FAIL: discard %" PRIu64 "+%" PRIu64
				"\n", a, len);
			raid_test_failures++;
			goto fail;
		}
		memset(shadow + a, 0, len);
		bad = raid_verify(v, &first_bad);
		if (bad || compare_all(v, shadow, span, "after discard")) {
			if (bad) {
				fprintf(stderr, "FAIL: %ld stripes with bad "
					"parity after discard\n", bad);
				raid_test_failures++;
			}
			goto fail;
		}
	}
	if (check_drop(v, shadow, span, &s2))
		goto fail;
	printf("  ok: parity, contents, degraded reads, rebuild\n");
fail:
	free(buf);
	free(shadow);
	raid_destroy(v, 1);
	return raid_test_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct { int level; unsigned int n; uint32_t chunk; }
	cfgs[] = {
		{ 5, 3, 4096 }, { 5, 4, 8192 }, { 5, 6, 4096 },
		{ 6, 4, 4096 }, { 6, 5, 8192 }, { 6, 7, 4096 },
	};
	const char *dir = argc > 2 ? argv[2] : getenv("WTIO_RAID_DIR");
	uint64_t seed;
	unsigned int i;

	seed = raid_test_seed(argc, argv);
	if (!dir || !*dir)
		dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : ".";
	printf("test_raid: seed %" PRIu64 " (rerun: test_raid %" PRIu64
	       " %s), members in %s\n", seed, seed, dir, dir);
	for (i = 0; i < sizeof(cfgs) / sizeof(cfgs[0]); i++) {
		int r = run_one(dir, cfgs[i].level, cfgs[i].n, cfgs[i].chunk,
				seed + i);

		if (r == 77) {
			printf("SKIP: cannot create member files in %s\n", dir);
			return 77;
		}
		if (r)
			return 1;
	}
	printf("PASS\n");
	return 0;
}
