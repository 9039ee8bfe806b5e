/* SPDX-License-Identifier: MIT */
/*
 * test_wt_modes_bad - flag checks: NOSERIAL without WRITETHROUGH is
 * -EINVAL; an ATOMIC write of the wrong shape is -EINVAL, and
 * -EOPNOTSUPP where the file cannot take untorn writes at all;
 * WTIO_WRITETHROUGH as a file's default makes plain writes write-through;
 * O_DSYNC at open makes plain writes durable at return.
 */
#include "helpers.h"
#include "t_fault.h"

#define BS 4096

static uint64_t dirty(struct wtio_ctx *ctx)
{
	struct wtio_stats st;

	CHECK_OK(wtio_stats(ctx, &st));
	return st.dirty_folios;
}

int main(void)
{
	struct wtio_fault *fault;
	struct wtio_config cfg;
	struct wtio_ctx *ctx;
	struct wtio_file *f, *g = NULL;
	struct wtio_queue *q;
	const char *path, *p2, *dst;
	uint8_t buf[3 * BS], shadow[3 * BS];
	uint64_t ack;
	size_t dlen;
	uint8_t *d;
	int s, bad_atomic;

	t_require_odirect();
	path = t_tmpfile("wtmodes");
	ctx = t_ctx(BS, 64, WTIO_BACKEND_AUTO);
	f = t_open(ctx, path, O_RDWR);
	memset(buf, 'x', sizeof(buf));

	CHECK_EQ(wtio_pwrite(f, buf, 10, 0, WTIO_NOSERIAL), -EINVAL);
	CHECK_EQ(wtio_pwrite(f, buf, 10, 0, WTIO_NOSERIAL | WTIO_DSYNC),
		 -EINVAL);
	{
		struct wtio_file_info fi;

		CHECK_OK(wtio_file_info(f, &fi));
		bad_atomic = fi.atomic_unit_max ? -EINVAL : -EOPNOTSUPP;
		printf("atomic units %u..%u: a misshapen atomic write gives %d\n",
		       fi.atomic_unit_min, fi.atomic_unit_max, bad_atomic);
	}
	/* 10 bytes: not a power of two; BS at BS/2: not naturally aligned. */
	CHECK_EQ(wtio_pwrite(f, buf, 10, 0, WTIO_ATOMIC), bad_atomic);
	CHECK_EQ(wtio_pwrite(f, buf, BS, BS / 2, WTIO_ATOMIC), bad_atomic);
	CHECK_EQ(wtio_pread(f, buf, 10, 0, WTIO_ATOMIC), -EINVAL);
	CHECK_EQ(wtio_pwrite(f, buf, 10, 0, 1u << 20), -EINVAL);
	CHECK_EQ(wtio_open(ctx, path, O_RDWR, 0, WTIO_NOSERIAL, &g), -EINVAL);
	CHECK(g == NULL);
	CHECK_OK(wtio_queue_create(ctx, 4, &q));
	CHECK_EQ(wtio_queue_pwrite(q, f, buf, 10, 0, WTIO_NOSERIAL, 1),
		 -EINVAL);
	CHECK_EQ(wtio_queue_pwrite(q, f, buf, 10, 0, WTIO_ATOMIC, 1),
		 bad_atomic);
	CHECK_EQ(wtio_queue_inflight(q), 0);
	CHECK_OK(wtio_queue_destroy(q));
	/* Nothing changed. */
	CHECK_EQ(wtio_file_size(f), 0);
	CHECK_EQ(t_disk_size(path), 0);
	printf("NOSERIAL alone -> -EINVAL; misshapen ATOMIC -> %d "
	       "(write, read, open, queue); nothing written\n", bad_atomic);
	CHECK_OK(wtio_close(f));

	/* Write-through as the file's default mode. */
	CHECK_OK(wtio_open(ctx, path, O_RDWR, 0, WTIO_WRITETHROUGH, &f));
	t_fill(shadow, sizeof(shadow), 9, 0);
	CHECK_EQ(wtio_pwrite(f, shadow, sizeof(shadow), 0, 0), sizeof(shadow));
	CHECK_EQ(dirty(ctx), 0);
	d = t_read_disk(path, &dlen);
	CHECK(dlen >= sizeof(shadow));
	CHECKF(t_memdiff(d, shadow, sizeof(shadow)) < 0,
	       "default-WRITETHROUGH write not on disk at return");
	free(d);
	/* ... and NOSERIAL is then valid per call. */
	t_fill(shadow + 100, 200, 10, 100);
	CHECK_EQ(wtio_pwrite(f, shadow + 100, 200, 100, WTIO_NOSERIAL), 200);
	CHECK_EQ(dirty(ctx), 0);
	d = t_read_disk(path, &dlen);
	CHECK(t_memdiff(d, shadow, sizeof(shadow)) < 0);
	free(d);
	CHECK_OK(wtio_close(f));
	CHECK_OK(wtio_ctx_destroy(ctx));
	printf("default WTIO_WRITETHROUGH at open: plain writes on disk at "
	       "return, no dirty folios\n");

	/* O_DSYNC at open: durable at return (fault recorder replay). */
	fault = wtio_fault_create();
	CHECK(fault);
	t_fault_config(&cfg, BS, 256);
	ctx = t_fault_ctx_create_or_skip(&cfg, fault);
	p2 = t_tmpfile("wtmodes-dsync");
	dst = t_tmpfile("wtmodes-replay");
	CHECK_OK(wtio_open(ctx, p2, O_RDWR | O_DSYNC, 0, 0, &f));
	memset(shadow, 0, sizeof(shadow));
	t_fill(shadow + 100, 5000, 11, 100);
	CHECK_EQ(wtio_pwrite(f, shadow + 100, 5000, 100, 0), 5000);
	CHECK_EQ(dirty(ctx), 0);
	t_fill(shadow + 6000, 3000, 12, 6000);
	CHECK_EQ(wtio_pwrite(f, shadow + 6000, 3000, 6000, WTIO_WRITETHROUGH),
		 3000);
	ack = wtio_fault_nr_events(fault);
	wtio_ctx_crash(ctx);
	for (s = 0; s < 8; s++) {
		int fd = open(dst, O_RDWR | O_TRUNC);
		struct stat st;
		uint8_t got[9000];

		CHECK(fd >= 0);
		CHECK_OK(wtio_fault_replay(fault, p2, ack, s, fd));
		CHECK_OK(fstat(fd, &st));
		CHECKF(st.st_size >= 9000, "seed %d: size %lld", s,
		       (long long)st.st_size);
		CHECK_EQ(pread(fd, got, 9000, 0), 9000);
		CHECKF(t_memdiff(got, shadow, 9000) < 0,
		       "seed %d: O_DSYNC data lost at %lld", s,
		       t_memdiff(got, shadow, 9000));
		close(fd);
	}
	wtio_fault_destroy(fault);
	printf("O_DSYNC at open: write-back and write-through writes durable "
	       "at return (8 replay seeds at the ack point)\n");
	printf("PASS\n");
	return T_EXIT_PASS;
}
