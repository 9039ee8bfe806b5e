/* SPDX-License-Identifier: MIT */
/*
 * test_sync_vs_flusher.c - a sync pass (close, fsync) that races with a
 * flusher writes everything that was dirty. Regression test: a WB_SYNC
 * pass used to stop at the first batch in which it wrote nothing itself,
 * which happens when a flusher cleaned that batch first, and close left
 * the rest of the file unwritten (zeros on disk, size right). Here the
 * file is as large as the cache, so the flushers run throughout; each
 * round writes it, closes (or fsyncs) and checks the disk byte for byte.
 */
#include "helpers.h"

#define FILE_SIZE (64u << 20)
#define CHUNK (1u << 20)
#define ROUNDS 16

int main(void)
{
	uint8_t *ref = t_malloc(FILE_SIZE);
	const char *path = t_tmpfile("syncflush");
	struct wtio_config cfg;
	int round, by_fsync = 0, by_close = 0;

	t_require_odirect();
	wtio_config_init(&cfg);
	cfg.cache_size = FILE_SIZE;
	for (round = 0; round < ROUNDS; round++) {
		struct wtio_ctx *ctx = NULL;
		struct wtio_file *f;
		uint32_t off;
		bool use_fsync = round & 1;

		t_fill(ref, FILE_SIZE, 1000 + (uint64_t)round, 0);
		CHECK_OK(wtio_ctx_create(&cfg, &ctx));
		f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
		for (off = 0; off < FILE_SIZE; off += CHUNK)
			CHECK_EQ(wtio_pwrite(f, ref + off, CHUNK, off, 0), CHUNK);
		if (use_fsync) {
			CHECK_OK(wtio_fsync(f));
			t_check_disk_equals(path, ref, FILE_SIZE);
			by_fsync++;
		}
		CHECK_OK(wtio_close(f));
		t_check_disk_equals(path, ref, FILE_SIZE);
		by_close += !use_fsync;
		CHECK_OK(wtio_ctx_destroy(ctx));
	}
	free(ref);
	printf("%d rounds of %u MiB through a %u MiB cache: disk equal after "
	       "fsync (%d) and close (%d)\n", ROUNDS, FILE_SIZE >> 20,
	       FILE_SIZE >> 20, by_fsync, by_close);
	return T_EXIT_PASS;
}
