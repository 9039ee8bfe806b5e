/* SPDX-License-Identifier: MIT */
/*
 * fuzz_api.c - libFuzzer target: the input is a sequence of wtio API calls
 * with arguments, on one small file, checked against a shadow copy.
 *
 * Each call is either well formed (then it must succeed and the shadow
 * follows it) or carries exactly one defect the API must reject: negative
 * or overflowing offsets and lengths, unknown or ill-combined flags, NULL
 * buffers and iovec arrays, bad iovec counts, closed and NULL handles,
 * atomic writes of the wrong shape, bad sync_range flags. A rejected call
 * must return the documented negative errno and change nothing: the size
 * and the bytes read back still equal the shadow. After fsync and close
 * the backing file (read with O_DIRECT) equals the shadow too.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wtio.h"

#define FMAX	(96u << 10)	/* largest file a valid call makes */
#define OPMAX	(12u << 10)	/* largest valid read/write */
#define MAXOFF	((int64_t)1 << 62)

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, int bytes)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < bytes; i++) {
		v = (v << 8) | (in->n ? *in->p : 0);
		if (in->n) {
			in->p++;
			in->n--;
		}
	}
	return v;
}

static struct wtio_ctx *ctx;
static char path[64];
static struct wtio_file *file;
static struct wtio_file *stale;	/* a closed handle, until the next open */
static struct wtio_queue *queue;
static struct wtio_file_info info;
static uint8_t shadow[FMAX + OPMAX];
static size_t size;
static uint8_t buf[OPMAX + 64], rbuf[OPMAX + 64];

#define FAIL(...) do {							\
	fprintf(stderr, "fuzz_api: " __VA_ARGS__);			\
	fprintf(stderr, "\n");						\
	abort();							\
} while (0)

#define EXPECT(call, want) do {						\
	long long __r = (long long)(call), __w = (long long)(want);	\
	if (__r != __w)							\
		FAIL("%s:%d: %s = %lld, want %lld", __FILE__, __LINE__,	\
		     #call, __r, __w);					\
} while (0)

static void check_state(void)
{
	off_t s = wtio_file_size(file);
	ssize_t n;

	if (s != (off_t)size)
		FAIL("size %lld, shadow %zu", (long long)s, size);
	/* A sample of the content. */
	n = wtio_pread(file, rbuf, OPMAX, size > OPMAX ? (off_t)(size - OPMAX) / 2 : 0, 0);
	if (n < 0)
		FAIL("check read: %zd", n);
	if (memcmp(rbuf, shadow + (size > OPMAX ? (size - OPMAX) / 2 : 0), (size_t)n))
		FAIL("content differs from shadow");
}

static void check_disk(void)
{
	int fd = open(path, O_RDONLY | O_DIRECT);
	static uint8_t dbuf[FMAX + OPMAX + 4096] __attribute__((aligned(4096)));
	off_t dsz;
	ssize_t n;

	if (fd < 0)
		FAIL("open O_DIRECT: %d", errno);
	dsz = lseek(fd, 0, SEEK_END);
	if (dsz != (off_t)size)
		FAIL("disk size %lld, shadow %zu", (long long)dsz, size);
	n = pread(fd, dbuf, sizeof(dbuf) & ~(size_t)4095, 0);
	close(fd);
	if (n != (ssize_t)size || memcmp(dbuf, shadow, size))
		FAIL("disk differs from shadow (read %zd)", n);
}

static void open_file(bool trunc)
{
	int ret = wtio_open(ctx, path, O_RDWR | O_CREAT | (trunc ? O_TRUNC : 0),
			    0600, 0, &file);

	if (ret)
		FAIL("open: %d", ret);
	stale = NULL;
	wtio_file_info(file, &info);
}

/* A valid offset and length; len <= OPMAX, end <= FMAX. */
static void valid_range(struct in *in, off_t *off, size_t *len)
{
	*len = (size_t)(take(in, 2) % (OPMAX + 1));
	*off = (off_t)(take(in, 3) % (FMAX - *len + 1));
}

/* Write flags: a valid combination, or an invalid one (*bad set). */
static unsigned write_flags(struct in *in, int *bad)
{
	uint8_t b = (uint8_t)take(in, 1);
	unsigned f = b & (WTIO_WRITETHROUGH | WTIO_DSYNC | WTIO_DONTCACHE);

	*bad = 0;
	if ((b & 0xc0) == 0xc0) {
		*bad = -EINVAL;
		return b & 0x20 ? (1u << (7 + (b & 15))) | f : WTIO_NOSERIAL | (f & ~WTIO_WRITETHROUGH);
	}
	if ((b & WTIO_NOSERIAL) && (f & WTIO_WRITETHROUGH))
		f |= WTIO_NOSERIAL;
	if (b & 0x10)
		f |= WTIO_ADAPTIVE;
	return f;
}

static void op_write(struct in *in, bool vec)
{
	int bad, kind = (int)take(in, 1) % 8;
	unsigned flags = write_flags(in, &bad);
	off_t off;
	size_t len;
	ssize_t want;
	struct iovec iov[3];

	valid_range(in, &off, &len);
	memset(buf, (int)take(in, 1) | 1, len);
	if (!bad) {
		switch (kind) {
		case 1: off = -1 - (off_t)take(in, 7); bad = -EINVAL; break;
		/* Past the largest file (wtio caps every filesystem's at
		 * 2^62, docs/DESIGN.md "The largest file"): -EFBIG, as
		 * pwrite; zero bytes are 0 anywhere. Crossing the limit is
		 * cut short there, which the model cannot follow: not made. */
		case 2: off = MAXOFF + 1 + (off_t)take(in, 2);
			bad = len ? -EFBIG : 0;
			break;
		case 3: off = MAXOFF + (off_t)take(in, 1);
			bad = len ? -EFBIG : 0;
			break;
		case 4: if (len) bad = -EFAULT; break;	/* NULL buffer */
		case 5: flags |= WTIO_ATOMIC;
			if (!info.atomic_unit_max) bad = -EOPNOTSUPP;
			else if (!len || (len & (len - 1)) || len < info.atomic_unit_min ||
				 len > info.atomic_unit_max || off % (off_t)len)
				bad = -EINVAL;
			break;
		default: break;
		}
	}
	want = bad ? bad : (ssize_t)len;
	if (vec) {
		size_t a = len / 3;

		iov[0] = (struct iovec){ buf, a };
		iov[1] = (struct iovec){ buf + a, 0 };
		iov[2] = (struct iovec){ buf + a, len - a };
		if (kind == 4 && len) {
			iov[2].iov_base = NULL;
			if (!iov[2].iov_len) { iov[0].iov_base = NULL; iov[0].iov_len = len; iov[2].iov_len = 0; }
		}
		EXPECT(wtio_pwritev(file, iov, 3, off, flags), want);
	} else {
		EXPECT(wtio_pwrite(file, kind == 4 ? NULL : buf, len, off, flags),
		       want);
	}
	if (!bad && len) {
		memcpy(shadow + off, buf, len);
		if ((size_t)off + len > size)
			size = (size_t)off + len;
	}
}

static void op_read(struct in *in)
{
	int kind = (int)take(in, 1) % 8;
	unsigned flags = take(in, 1) & 1 ? WTIO_DONTCACHE : 0;
	off_t off;
	size_t len, want;
	ssize_t got;

	valid_range(in, &off, &len);
	switch (kind) {
	case 1: EXPECT(wtio_pread(file, rbuf, len, -1 - (off_t)take(in, 7), flags), -EINVAL); return;
	/* A read past the largest file finds EOF, as pread does. */
	case 2: EXPECT(wtio_pread(file, rbuf, len, MAXOFF + 1, flags), 0); return;
	case 3: EXPECT(wtio_pread(file, rbuf, len, off, WTIO_WRITETHROUGH), -EINVAL); return;
	case 4: if (len) { EXPECT(wtio_pread(file, NULL, len, off, flags), -EFAULT); return; } break;
	case 5: EXPECT(wtio_pread(file, rbuf, (size_t)SSIZE_MAX + 1 + take(in, 2), off, flags), -EINVAL); return;
	case 6: { /* huge length past the end: nothing to read, unless the
		   * end is past the largest off_t: -EINVAL, as pread */
		size_t x = (size_t)take(in, 2);
		off_t o = (off_t)size + (off_t)take(in, 2);

		EXPECT(wtio_pread(file, rbuf, (size_t)SSIZE_MAX - x, o, flags),
		       o > (off_t)x ? -EINVAL : 0);
		return;
	}
	case 7: { /* bad iovec count */
		struct iovec v = { rbuf, len };

		EXPECT(wtio_preadv(file, &v, take(in, 1) & 1 ? -1 : IOV_MAX + 1, off, flags), -EINVAL);
		EXPECT(wtio_preadv(file, NULL, 1, off, flags), -EFAULT);
		return;
	}
	default: break;
	}
	want = (size_t)off < size ? (size - (size_t)off < len ? size - (size_t)off : len) : 0;
	got = wtio_pread(file, rbuf, len, off, flags);
	if (got != (ssize_t)want)
		FAIL("pread %zu @ %lld = %zd, want %zu", len, (long long)off, got, want);
	if (memcmp(rbuf, shadow + off, want))
		FAIL("pread %zu @ %lld differs from shadow", len, (long long)off);
}

static void op_truncate(struct in *in)
{
	int kind = (int)take(in, 1) % 4;
	off_t len = (off_t)(take(in, 3) % (FMAX + 1));

	if (kind == 1) {
		EXPECT(wtio_ftruncate(file, -1 - (off_t)take(in, 7)), -EINVAL);
		return;
	}
	if (kind == 2) {
		EXPECT(wtio_ftruncate(file, MAXOFF + 1 + (off_t)take(in, 2)), -EFBIG);
		return;
	}
	EXPECT(wtio_ftruncate(file, len), 0);
	if ((size_t)len < size)
		memset(shadow + len, 0, size - (size_t)len);
	size = (size_t)len;
}

static void op_sync(struct in *in)
{
	int kind = (int)take(in, 1) % 6;
	off_t off = (off_t)take(in, 3), n = (off_t)take(in, 3);

	switch (kind) {
	case 0: EXPECT(wtio_fsync(file), 0); check_disk(); break;
	case 1: EXPECT(wtio_fdatasync(file), 0); check_disk(); break;
	case 2: EXPECT(wtio_sync_range(file, off, n, (unsigned)take(in, 1) & 7), 0); break;
	case 3: EXPECT(wtio_sync_range(file, off, n, 8u << (take(in, 1) % 24)), -EINVAL); break;
	case 4: EXPECT(wtio_sync_range(file, -1 - off, n, WTIO_SYNC_RANGE_WRITE), -EINVAL); break;
	/* As the kernel's: only a range whose end overflows is invalid. */
	default: EXPECT(wtio_sync_range(file, INT64_MAX - off, off + 1, WTIO_SYNC_RANGE_WRITE), -EINVAL); break;
	}
}

static void op_handles(struct in *in)
{
	struct wtio_file *f2 = NULL;
	struct wtio_file_info fi;

	switch (take(in, 1) % 6) {
	case 0:	/* close and reopen; the closed handle is dead */
		EXPECT(wtio_close(file), 0);
		check_disk();
		stale = file;
		file = NULL;
		EXPECT(wtio_pwrite(stale, buf, 1, 0, 0), -EBADF);
		EXPECT(wtio_pread(stale, rbuf, 1, 0, 0), -EBADF);
		EXPECT(wtio_fsync(stale), -EBADF);
		EXPECT(wtio_ftruncate(stale, 0), -EBADF);
		EXPECT(wtio_file_size(stale), -EBADF);
		EXPECT(wtio_close(stale), -EBADF);
		EXPECT(wtio_sync_range(stale, 0, 0, 0), -EBADF);
		if (queue)
			EXPECT(wtio_queue_pwrite(queue, stale, buf, 1, 0, 0, 0), -EBADF);
		open_file(false);
		break;
	case 1:
		EXPECT(wtio_pwrite(NULL, buf, 1, 0, 0), -EBADF);
		EXPECT(wtio_close(NULL), -EBADF);
		EXPECT(wtio_file_info(file, NULL), -EINVAL);
		EXPECT(wtio_file_info(NULL, &fi), -EBADF);
		break;
	case 2:
		EXPECT(wtio_open(ctx, NULL, O_RDWR, 0, 0, &f2), -EINVAL);
		EXPECT(wtio_open(ctx, path, O_RDWR, 0, 0, NULL), -EINVAL);
		EXPECT(wtio_open(NULL, path, O_RDWR, 0, 0, &f2), -EINVAL);
		EXPECT(wtio_open(ctx, "", O_RDWR, 0, 0, &f2), -ENOENT);
		EXPECT(wtio_open(ctx, path, O_RDWR, 0, 1u << (7 + take(in, 1) % 25), &f2), -EINVAL);
		EXPECT(wtio_open(ctx, path, O_RDWR, 0, WTIO_NOSERIAL, &f2), -EINVAL);
		break;
	case 3: /* a second handle of the same file shares the cache */
		EXPECT(wtio_open(ctx, path, O_RDWR, 0, 0, &f2), 0);
		EXPECT(wtio_file_size(f2), (long long)size);
		EXPECT(wtio_close(f2), 0);
		break;
	case 4: { /* a read-only handle refuses writes */
		EXPECT(wtio_open(ctx, path, O_RDONLY, 0, 0, &f2), 0);
		EXPECT(wtio_pwrite(f2, buf, 1, 0, 0), -EBADF);
		EXPECT(wtio_ftruncate(f2, 0), -EBADF);
		EXPECT(wtio_close(f2), 0);
		break;
	}
	default:
		if (stale)
			EXPECT(wtio_pread(stale, rbuf, 1, 0, 0), -EBADF);
		break;
	}
}

static void op_queue(struct in *in)
{
	struct wtio_cqe cqe[4];
	off_t off;
	size_t len;
	int bad, n;
	uint8_t c;
	unsigned flags = write_flags(in, &bad);

	valid_range(in, &off, &len);
	if (!queue)
		EXPECT(wtio_queue_create(ctx, 4, &queue), 0);
	EXPECT(wtio_queue_pwrite(NULL, file, buf, len, off, 0, 1), -EINVAL);
	EXPECT(wtio_queue_pread(queue, file, rbuf, len, -1, 0, 1), -EINVAL);
	EXPECT(wtio_queue_reap(queue, cqe, 1, 2, 0), -EINVAL);
	c = (uint8_t)(take(in, 1) | 1);
	memset(buf, c, len);
	EXPECT(wtio_queue_pwrite(queue, file, buf, len, off, flags, 7), bad);
	if (bad) {
		EXPECT(wtio_queue_inflight(queue), 0);
		return;
	}
	memset(buf, 0, len);	/* reusable as soon as submit returns */
	n = wtio_queue_reap(queue, cqe, 4, 1, -1);
	if (n != 1 || cqe[0].user_data != 7 || cqe[0].res != (int64_t)len)
		FAIL("queue write: %d completions, res %lld want %zu", n,
		     n > 0 ? (long long)cqe[0].res : 0, len);
	if (len) {
		memset(shadow + off, c, len);
		if ((size_t)off + len > size)
			size = (size_t)off + len;
	}
}

static void setup(void)
{
	struct wtio_config cfg;

	snprintf(path, sizeof(path), "wtio-fuzz.%d", (int)getpid());
	wtio_config_init(&cfg);
	cfg.folio_size = 4096;
	cfg.cache_size = 4096 * 24;	/* small: eviction */
	cfg.readahead_max = 16384;
	cfg.backend = WTIO_BACKEND_PSYNC;
	if (wtio_ctx_create(&cfg, &ctx))
		FAIL("ctx create");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct in in = { data, n };
	int ops = 0;

	if (!ctx)
		setup();
	open_file(true);
	size = 0;
	memset(shadow, 0, sizeof(shadow));
	while (in.n && ops++ < 64) {
		switch (take(&in, 1) % 8) {
		case 0: case 1: op_write(&in, false); break;
		case 2: op_write(&in, true); break;
		case 3: case 4: op_read(&in); break;
		case 5: op_truncate(&in); break;
		case 6: op_sync(&in); break;
		default:
			if (take(&in, 1) & 1)
				op_handles(&in);
			else
				op_queue(&in);
			break;
		}
		check_state();
	}
	if (queue) {
		EXPECT(wtio_queue_destroy(queue), 0);
		queue = NULL;
	}
	EXPECT(wtio_close(file), 0);
	check_disk();
	file = NULL;
	unlink(path);
	return 0;
}
