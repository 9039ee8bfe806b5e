/* SPDX-License-Identifier: MIT */
/*
 * test_raid_wtio.c - wtio over the RAID backend: the file's bytes land in
 * the volume with good parity, the placeholder keeps the size, truncation
 * leaves zeros when the file grows again, the stripe geometry reaches
 * wtio, and sequential writeback with the array's geometry (unit = the
 * chunk, width = chunk x data disks, as XFS on md reports it) writes
 * every stripe whole and reads no member: on RAID-5 with a width that
 * divides the 1 MiB I/O cap, with one that does not (3 data disks), and
 * on RAID-6. With one chunk per I/O (width and max_io_size one chunk:
 * how writeback was cut before it aligned to the width), the same writes
 * pay read-modify-write.
 *
 *   test_raid_wtio [SEED]      (SEED also from WTIO_RAID_SEED)
 * Exit 0 pass, 1 fail, 77 skip.
 */
#include "raid_io.h"
#include "raid_test.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (16u << 10)
/* The volume of the random writes: four data chunks. */
#define DISKS 5u
#define FILE_MAX (1u << 20)

static char dir[] = "/dev/shm/test-raid-wtio.XXXXXX";

static struct wtio_ctx *ctx_new(struct raid_files *rf, uint32_t su,
				uint32_t sw, uint32_t max_io, unsigned int flags)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	int ret;

	wtio_config_init(&cfg);
	cfg.cache_size = 64u << 20;	/* no background writeback */
	cfg.stripe_unit = su;
	cfg.stripe_width = sw;
	if (max_io)
		cfg.max_io_size = max_io;
	cfg.flags |= flags;
	ret = raid_ctx_create(&cfg, rf, &ctx);
	if (ret)
		fprintf(stderr, "raid_ctx_create: %s\n", strerror(-ret));
	return ctx;
}

/* The volume at the file's region against the expected bytes. */
static int check_volume(struct raid_files *rf, struct wtio_file *f,
			const uint8_t *want, size_t len, const char *what)
{
	struct raid_vol *v = raid_files_vol(rf);
	struct wtio_file_info fi;
	size_t n = (len + RAID_SECTOR - 1) / RAID_SECTOR * RAID_SECTOR;
	uint8_t *buf = malloc(n ? n : 1);
	uint64_t bad = 0;
	size_t i;
	long nbad;

	CHECK(buf, "malloc");
	CHECK(wtio_file_info(f, &fi) == 0, "file info");
	(void)fi;
	CHECK(raid_pread(v, buf, n, 0) == (ssize_t)n, "%s: volume read", what);
	for (i = 0; i < len && buf[i] == want[i]; i++)
		;
	free(buf);
	CHECK(i == len, "%s: volume byte %zu differs", what, i);
	nbad = raid_verify(v, &bad);
	CHECK(nbad == 0, "%s: %ld stripes with bad parity (first %" PRIu64 ")",
	      what, nbad, bad);
	return 0;
}

static int check_file(struct wtio_file *f, const char *path,
		      const uint8_t *want, size_t len, const char *what)
{
	uint8_t *buf = malloc(len + 1);
	struct stat st;
	ssize_t r;

	CHECK(buf, "malloc");
	r = wtio_pread(f, buf, len + 1, 0, 0);
	CHECK(r == (ssize_t)len && !memcmp(buf, want, len),
	      "%s: wtio_pread gave %zd of %zu bytes, or other bytes", what, r,
	      len);
	free(buf);
	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == len,
	      "%s: placeholder size %lld, want %zu", what,
	      (long long)st.st_size, len);
	return 0;
}

static int random_io(struct raid_files *rf, uint64_t seed)
{
	struct wtio_ctx *ctx = ctx_new(rf, 0, 0, 0, 0);
	struct wtio_file_info fi;
	struct wtio_file *f;
	char path[128];
	uint8_t *shadow = calloc(1, FILE_MAX), *buf = malloc(FILE_MAX);
	size_t size = 0;
	int i;

	CHECK(ctx && shadow && buf, "setup");
	snprintf(path, sizeof(path), "%s/file", dir);
	CHECK(wtio_open(ctx, path, O_RDWR | O_CREAT, 0600, 0, &f) == 0,
	      "open");
	CHECK(wtio_file_info(f, &fi) == 0 && fi.stripe_unit == CHUNK &&
	      fi.stripe_width == CHUNK * (DISKS - 1),
	      "geometry: su %u sw %u, want %u %u", fi.stripe_unit,
	      fi.stripe_width, CHUNK, CHUNK * (DISKS - 1));
	for (i = 0; i < 200; i++) {
		size_t off = rnd(&seed) % (FILE_MAX - 1);
		size_t len = 1 + rnd(&seed) % (FILE_MAX / 8);
		size_t j;

		if (off + len > FILE_MAX)
			len = FILE_MAX - off;
		for (j = 0; j < len; j++)
			buf[j] = (uint8_t)rnd(&seed);
		CHECK(wtio_pwrite(f, buf, len, (off_t)off, 0) == (ssize_t)len,
		      "write %zu+%zu", off, len);
		memcpy(shadow + off, buf, len);
		if (off + len > size)
			size = off + len;
		if (i % 50 == 49)
			CHECK(wtio_fsync(f) == 0, "fsync");
	}
	CHECK(wtio_fsync(f) == 0, "fsync");
	if (check_file(f, path, shadow, size, "random writes") ||
	    check_volume(rf, f, shadow, size, "random writes"))
		return -1;

	/* Shrink to an odd size, grow again: zeros past the cut. */
	{
		size_t cut = size / 3 + 777;

		CHECK(wtio_ftruncate(f, (off_t)cut) == 0, "shrink");
		CHECK(wtio_ftruncate(f, (off_t)size) == 0, "grow");
		memset(shadow + cut, 0, size - cut);
		CHECK(wtio_fsync(f) == 0, "fsync");
		if (check_file(f, path, shadow, size, "truncate") ||
		    check_volume(rf, f, shadow, size, "truncate"))
			return -1;
	}
	CHECK(wtio_close(f) == 0, "close");
	/* Reopened with O_TRUNC in a new context: the old bytes are gone. */
	CHECK(wtio_ctx_destroy(ctx) == 0, "ctx destroy");
	ctx = ctx_new(rf, 0, 0, 0, 0);
	CHECK(ctx, "ctx");
	CHECK(wtio_open(ctx, path, O_RDWR | O_TRUNC, 0600, 0, &f) == 0,
	      "reopen");
	CHECK(wtio_ftruncate(f, (off_t)size) == 0, "grow");
	memset(shadow, 0, size);
	if (check_file(f, path, shadow, size, "O_TRUNC") ||
	    check_volume(rf, f, shadow, size, "O_TRUNC"))
		return -1;
	CHECK(wtio_close(f) == 0, "close");
	CHECK(wtio_ctx_destroy(ctx) == 0, "ctx destroy");
	unlink(path);
	free(shadow);
	free(buf);
	printf("random writes, truncation, O_TRUNC: ok\n");
	return 0;
}

/* Sequential buffered writes of 43 stripes, one fsync (the cache holds
 * them all: no background writeback): member reads, stripes in part. */
static int seq_run(struct raid_files *rf, const char *name, uint32_t su,
		   uint32_t sw, uint32_t max_io, unsigned int flags,
		   uint64_t *reads, uint64_t *partial)
{
	struct raid_vol *v = raid_files_vol(rf);
	struct raid_member_stats ms[RAID_MAX_DISKS];
	struct raid_vol_stats vs;
	struct wtio_ctx *ctx = ctx_new(rf, su, sw, max_io, flags);
	uint64_t w = raid_stripe_width(v), total = 43 * w, off;
	uint8_t *buf = malloc(64u << 10);
	struct wtio_file *f;
	char path[128];
	unsigned int k;

	CHECK(ctx && buf, "setup");
	memset(buf, 0x5a, 64u << 10);
	snprintf(path, sizeof(path), "%s/seq", dir);
	CHECK(wtio_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC, 0600, 0, &f) ==
	      0, "open");
	raid_stats_reset(v);
	for (off = 0; off < total; off += 64u << 10) {
		size_t len = total - off < (64u << 10) ? total - off : 64u << 10;

		CHECK(wtio_pwrite(f, buf, len, (off_t)off, 0) == (ssize_t)len,
		      "write");
	}
	CHECK(wtio_fsync(f) == 0, "fsync");
	raid_stats(v, ms, &vs);
	*reads = 0;
	for (k = 0; k < raid_disks(v); k++)
		*reads += ms[k].reads;
	*partial = vs.partial_stripe_writes;
	printf("  %-26s member reads %4" PRIu64 ", full stripes %3" PRIu64
	       ", partial %3" PRIu64 "\n", name, *reads, vs.full_stripe_writes,
	       vs.partial_stripe_writes);
	CHECK(wtio_close(f) == 0, "close");
	CHECK(wtio_ctx_destroy(ctx) == 0, "ctx destroy");
	unlink(path);
	free(buf);
	return 0;
}

/*
 * A fresh volume: sequential writes with the array's geometry (what
 * raid_ctx_create gives a context without one), one chunk per I/O, and
 * not cut. The first must read nothing and write no stripe in part; the
 * second must read.
 */
static int seq_volume(int level, unsigned int disks)
{
	char vdir[] = "/dev/shm/test-raid-wtio-seq.XXXXXX";
	struct raid_vol *v;
	struct raid_files *rf;
	uint64_t r_width, p_width, r_chunk, p_chunk, r_none, p_none;
	int ret, rc = -1;

	if (!mkdtemp(vdir)) {
		fprintf(stderr, "FAIL: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	ret = raid_create(vdir, "member", level, disks, CHUNK, &v);
	if (ret) {
		fprintf(stderr, "FAIL: raid_create: %s\n", strerror(-ret));
		rmdir(vdir);
		return -1;
	}
	if (raid_files_create(v, &rf))
		goto out_vol;
	printf("sequential writes, one fsync, RAID-%d %u x %u KiB (stripe %"
	       PRIu64 " KiB):\n", level, disks, CHUNK >> 10,
	       raid_stripe_width(v) >> 10);
	if (seq_run(rf, "the array's (width)", 0, 0, 0, 0, &r_width,
		    &p_width) ||
	    seq_run(rf, "one chunk per I/O", CHUNK, CHUNK, CHUNK, 0, &r_chunk,
		    &p_chunk) ||
	    seq_run(rf, "not cut", 0, 0, 0, WTIO_CONFIG_NO_STRIPE_ALIGN,
		    &r_none, &p_none))
		goto out;
	if (r_width != 0 || p_width != 0 || r_chunk == 0) {
		fprintf(stderr, "FAIL: RAID-%d %u disks: the array's geometry "
			"read %" PRIu64 " and wrote %" PRIu64 " stripes in part "
			"(want 0, 0); one chunk per I/O read %" PRIu64
			" (want > 0)\n", level, disks, r_width, p_width,
			r_chunk);
		goto out;
	}
	rc = 0;
out:
	raid_files_destroy(rf);
out_vol:
	raid_destroy(v, 1);
	rmdir(vdir);
	return rc;
}

int main(int argc, char **argv)
{
	struct raid_vol *v;
	struct raid_files *rf;
	uint64_t seed;
	int ret, rc = 1;

	seed = raid_test_seed(argc, argv);
	printf("test_raid_wtio: seed %" PRIu64 " (rerun: test_raid_wtio %"
	       PRIu64 ")\n", seed, seed);
	if (!mkdtemp(dir)) {
		printf("SKIP: cannot make a directory in /dev/shm: %s\n",
		       strerror(errno));
		return 77;
	}
	ret = raid_create(dir, "member", 5, DISKS, CHUNK, &v);
	if (ret) {
		fprintf(stderr, "FAIL: raid_create: %s\n", strerror(-ret));
		rmdir(dir);
		return 1;
	}
	if (raid_files_create(v, &rf))
		goto out_vol;
	if (random_io(rf, seed))
		goto out;
	/* 64 KiB stripes (divide 1 MiB), 48 KiB (do not), RAID-6's 48. */
	if (seq_volume(5, 5) || seq_volume(5, 4) || seq_volume(6, 5))
		goto out;
	printf("PASS\n");
	rc = 0;
out:
	raid_files_destroy(rf);
out_vol:
	raid_destroy(v, 1);
	rmdir(dir);
	return rc;
}
