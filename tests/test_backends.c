/* SPDX-License-Identifier: MIT */
/*
 * test_backends.c - the same small read/write/fsync workload on the psync
 * backend and AUTO ("test_backends"), or on io_uring ("test_backends
 * io_uring", registered as its own test, backends_uring): that one exits
 * 77 with the reason when the kernel or sandbox refuses io_uring, so a
 * backend that did not run is never counted as passed.
 */
#include "helpers.h"

#define SIZE (3u << 20)

static int run(uint32_t backend, const char *want_name, uint32_t fs)
{
	struct wtio_config cfg;
	struct wtio_ctx *ctx = NULL;
	struct wtio_file *f;
	const char *path = t_tmpfile("backends");
	uint8_t *shadow = t_zalloc(SIZE), *buf = t_malloc(SIZE);
	struct t_rng r = { backend * 10 + fs };
	struct wtio_stats st;
	size_t size = 0;
	int i, ret;

	wtio_config_init(&cfg);
	cfg.folio_size = fs;
	cfg.cache_size = (uint64_t)fs * 64;
	cfg.readahead_max = (uint32_t)(cfg.cache_size / 4);
	cfg.backend = backend;
	ret = wtio_ctx_create(&cfg, &ctx);
	if (ret == -EOPNOTSUPP && backend == WTIO_BACKEND_IO_URING)
		t_skip("io_uring not available here (wtio_ctx_create: "
		       "-EOPNOTSUPP)");
	CHECKF(ret == 0, "ctx_create(%s): %d", want_name, ret);
	if (want_name)
		CHECKF(strcmp(wtio_ctx_backend_name(ctx), want_name) == 0,
		       "backend %s, want %s", wtio_ctx_backend_name(ctx),
		       want_name);
	f = t_open(ctx, path, O_RDWR | O_CREAT | O_TRUNC);
	for (i = 0; i < 300; i++) {
		size_t len = 1 + t_rand_below(&r, 200000);
		off_t off = (off_t)t_rand_below(&r, SIZE - len);

		t_fill(buf, len, (uint64_t)i, (uint64_t)off);
		CHECK_EQ(wtio_pwrite(f, buf, len, off, 0), (long long)len);
		memcpy(shadow + off, buf, len);
		if ((size_t)off + len > size)
			size = (size_t)off + len;
		if (i % 50 == 49) {
			CHECK_OK(wtio_fsync(f));
			t_check_disk_equals(path, shadow, size);
		}
		off = (off_t)t_rand_below(&r, SIZE - len);
		t_check_wtio_range(f, shadow, size, off, len);
	}
	t_check_wtio_range(f, shadow, size, 0, size);
	CHECK_OK(wtio_fdatasync(f));
	CHECK_OK(wtio_stats(ctx, &st));
	CHECK(st.write_ios > 0 && st.read_ios > 0);
	CHECK_OK(wtio_close(f));
	t_check_disk_equals(path, shadow, size);
	/* Cold read through the backend. */
	f = t_open(ctx, path, O_RDONLY);
	t_check_wtio_range(f, shadow, size, 0, size);
	CHECK_OK(wtio_close(f));
	printf("  %s (folio %u): 300 writes, %llu write I/Os, %llu read I/Os, "
	       "verified\n", wtio_ctx_backend_name(ctx), fs,
	       (unsigned long long)st.write_ios,
	       (unsigned long long)st.read_ios);
	CHECK_OK(wtio_ctx_destroy(ctx));
	unlink(path);
	free(shadow);
	free(buf);
	return 1;
}

int main(int argc, char **argv)
{
	int ran = 0;

	t_require_odirect();
	if (argc > 1 && !strcmp(argv[1], "io_uring")) {
		ran += run(WTIO_BACKEND_IO_URING, "io_uring", 4096);
		ran += run(WTIO_BACKEND_IO_URING, "io_uring", 65536);
	} else {
		CHECKF(argc == 1, "usage: %s [io_uring]", argv[0]);
		ran += run(WTIO_BACKEND_PSYNC, "psync", 4096);
		ran += run(WTIO_BACKEND_PSYNC, "psync", 65536);
		ran += run(WTIO_BACKEND_AUTO, NULL, 16384);
	}
	printf("backends: %d configurations run: PASS\n", ran);
	return T_EXIT_PASS;
}
