/* SPDX-License-Identifier: MIT */
/*
 * run.c - the random operation sequence and the checks after each one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wtio.h"
#include "fsx.h"

struct fsx {
	const struct fsx_opts *o;
	struct fsx_target *t;
	struct fsx_shadow s;
	uint64_t rng;
	uint64_t op;		/* current operation number */
	uint64_t counts[OP_NR];
	uint64_t nowait_eagain, disk_checks;
	uint64_t refused, cut;	/* --tight: writes refused, cut short */
	uint32_t atomic_min, atomic_max;
	uint8_t *buf, *buf2;	/* 2 * max_op + 64 each */
	uint64_t dc_next;	/* where the last DONTCACHE write ended */
};

static uint64_t rnd(struct fsx *x)
{
	uint64_t z = (x->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [0, n); n == 0 gives 0. */
static uint64_t below(struct fsx *x, uint64_t n)
{
	return n ? rnd(x) % n : 0;
}

static bool allowed(const struct fsx *x, enum fsx_op op)
{
	return !x->o->excluded[op];
}

static const char *flag_str(unsigned f)
{
	static char s[80];

	snprintf(s, sizeof(s), "%s%s%s%s%s%s", f ? "" : "-",
		 f & WTIO_WRITETHROUGH ? "WT " : "", f & WTIO_DSYNC ? "DSYNC " : "",
		 f & WTIO_NOSERIAL ? "NOSERIAL " : "",
		 f & WTIO_DONTCACHE ? "DONTCACHE " : "",
		 f & WTIO_ATOMIC ? "ATOMIC " : "");
	if (f & WTIO_NOWAIT)
		strcat(s, "NOWAIT");
	return s;
}

static void check_size(struct fsx *x)
{
	off_t sz = x->t->ops->size(x->t);

	if (sz < 0 || (uint64_t)sz != x->s.size)
		fsx_fail(x->op, "file size %lld, shadow size %llu", (long long)sz,
			 (unsigned long long)x->s.size);
}

/* Read [off, off+len) through the target and compare with the shadow. */
static void check_read(struct fsx *x, uint64_t off, size_t len,
		       unsigned flags, int nsegs)
{
	/* No random draw here: how many checks run depends on results
	 * (NOWAIT), and the sequence must not. */
	uint8_t *p = x->buf2 + (off * 7 + len) % 8;
	size_t want = off < x->s.size ?
		(x->s.size - off < len ? (size_t)(x->s.size - off) : len) : 0;
	ssize_t n = x->t->ops->pread(x->t, p, len, (off_t)off, flags, nsegs);

	if ((flags & WTIO_NOWAIT) && n == -EAGAIN) {
		x->nowait_eagain++;
		return;
	}
	if ((flags & WTIO_NOWAIT) && n > 0 && (size_t)n < want)
		want = (size_t)n;	/* a short read, then it would block */
	if (n != (ssize_t)want)
		fsx_fail(x->op, "read 0x%llx+0x%zx returned %zd, want %zu",
			 (unsigned long long)off, len, n, want);
	fsx_check_bytes(x->op, "read vs shadow", p, x->s.data + off, want, off);
}

/* An offset and length for a read or write: unaligned often, block
 * aligned sometimes, sometimes tiny. */
static void pick_range(struct fsx *x, uint64_t *offp, size_t *lenp,
		       uint64_t limit)
{
	size_t len;
	uint64_t off;

	switch (below(x, 4)) {
	case 0:
		len = 1 + below(x, 600);
		break;
	case 1:
		len = (size_t)((1 + below(x, x->o->max_op / 512 + 1)) * 512);
		break;
	default:
		len = 1 + below(x, x->o->max_op);
	}
	if (len > x->o->max_op)
		len = (size_t)x->o->max_op;
	if (len > limit)
		len = (size_t)limit;
	off = below(x, limit - len + 1);
	if (below(x, 4) == 0)
		off &= ~(uint64_t)511;
	*offp = off;
	*lenp = len;
}

static int pick_segs(struct fsx *x)
{
	return below(x, 4) ? 1 : 2 + (int)below(x, 5);
}

static void do_read(struct fsx *x)
{
	uint64_t off;
	size_t len;
	unsigned flags = 0;
	int nsegs = pick_segs(x);

	/* Reads go past EOF sometimes. */
	pick_range(x, &off, &len, x->s.size + x->o->max_op < x->o->max_len ?
		   x->s.size + x->o->max_op : x->o->max_len);
	if (allowed(x, OP_DONTCACHE) && below(x, 6) == 0)
		flags |= WTIO_DONTCACHE;
	if (!x->o->posix && below(x, 16) == 0)
		flags |= WTIO_NOWAIT;
	fsx_log(x->op, "read 0x%llx+0x%zx %s segs %d", (unsigned long long)off,
		len, flag_str(flags), nsegs);
	check_read(x, off, len, flags, nsegs);
	x->counts[OP_READ]++;
}

/* One synchronous write with flags; kind is the op type it counts as. */
static void write_and_check(struct fsx *x, enum fsx_op kind, uint64_t off,
			    size_t len, unsigned flags)
{
	uint8_t *p = x->buf + below(x, 8);
	int nsegs = (flags & WTIO_ATOMIC) ? 1 : pick_segs(x);
	ssize_t n;
	/* The written range and a little around it reads back (all of it:
	 * a write refused or cut short changes nothing past its count). */
	uint64_t lo = off > 700 ? off - 700 : 0;
	uint64_t hi = off + len + 700 < x->o->max_len ? off + len + 700 :
							 x->o->max_len;

	fsx_fill(p, len, x->op, off);
	fsx_log(x->op, "%s 0x%llx+0x%zx [%s] segs %d", fsx_op_names[kind],
		(unsigned long long)off, len, flag_str(flags), nsegs);
	n = x->t->ops->pwrite(x->t, p, len, (off_t)off, flags, nsegs);
	if ((flags & WTIO_NOWAIT) && n == -EAGAIN) {
		x->nowait_eagain++;
		check_size(x);
		return;
	}
	if ((flags & WTIO_NOWAIT) && n > 0 && (size_t)n < len)
		len = (size_t)n;	/* stopped where it would block */
	if (x->o->tight && (n == -ENOSPC || n == -EDQUOT)) {
		x->refused++;
		check_size(x);
		check_read(x, lo, (size_t)(hi - lo), 0, 1);
		return;
	}
	/* Out of room part way, as the kernel's write stops; an untorn
	 * write is whole or nothing. */
	if (x->o->tight && n > 0 && (size_t)n < len &&
	    !(flags & WTIO_ATOMIC)) {
		x->cut++;
		len = (size_t)n;
	}
	if (n != (ssize_t)len)
		fsx_fail(x->op, "%s 0x%llx+0x%zx [%s] returned %zd (%s)",
			 fsx_op_names[kind], (unsigned long long)off, len,
			 flag_str(flags), n, n < 0 ? strerror((int)-n) : "short");
	fsx_shadow_write(&x->s, p, len, off);
	x->counts[kind]++;
	check_size(x);
	check_read(x, lo, (size_t)(hi - lo), 0, 1);
	/* Write-through and DSYNC writes have reached the backing file when
	 * they return. */
	if (!x->o->posix && !(flags & WTIO_NOWAIT) &&
	    (flags & (WTIO_WRITETHROUGH | WTIO_DSYNC | WTIO_ATOMIC))) {
		fsx_check_disk(x->op, x->o->path, &x->s, false, off, len);
		x->disk_checks++;
	}
}

static void do_write(struct fsx *x, enum fsx_op kind)
{
	uint64_t off;
	size_t len;
	unsigned flags = 0;

	pick_range(x, &off, &len, x->o->max_len);
	switch (kind) {
	case OP_WRITETHROUGH:
		flags = WTIO_WRITETHROUGH;
		break;
	case OP_DSYNC:
		flags = WTIO_DSYNC;
		if (allowed(x, OP_WRITETHROUGH) && below(x, 2))
			flags |= WTIO_WRITETHROUGH;
		break;
	case OP_NOSERIAL:
		flags = WTIO_WRITETHROUGH | WTIO_NOSERIAL;
		if (allowed(x, OP_DSYNC) && below(x, 4) == 0)
			flags |= WTIO_DSYNC;
		break;
	case OP_DONTCACHE:
		if (below(x, 3) == 0) {
			/* a drop-behind read */
			fsx_log(x->op, "read 0x%llx+0x%zx [DONTCACHE]",
				(unsigned long long)off, len);
			check_read(x, off, len, WTIO_DONTCACHE, 1);
			x->counts[OP_DONTCACHE]++;
			return;
		}
		flags = WTIO_DONTCACHE;
		if (allowed(x, OP_WRITETHROUGH) && below(x, 2)) {
			flags |= WTIO_WRITETHROUGH;
			if (allowed(x, OP_NOSERIAL) && below(x, 3) == 0)
				flags |= WTIO_NOSERIAL;
		}
		if (allowed(x, OP_DSYNC) && below(x, 4) == 0)
			flags |= WTIO_DSYNC;
		/* Half of them go on from where the last one ended: a
		 * stream's, which the library gathers into large I/Os. */
		if (x->dc_next && x->dc_next < x->o->max_len && below(x, 2)) {
			off = x->dc_next;
			if (len > x->o->max_len - off)
				len = (size_t)(x->o->max_len - off);
		}
		break;
	default:
		break;
	}
	if (!x->o->posix && below(x, 16) == 0)
		flags |= WTIO_NOWAIT;
	if (flags & WTIO_DONTCACHE)
		x->dc_next = off + len;
	write_and_check(x, kind, off, len, flags);
}

static void do_atomic(struct fsx *x)
{
	uint32_t lo = x->atomic_min, hi = x->atomic_max;
	uint64_t len = lo, nr;
	unsigned flags = WTIO_ATOMIC;

	while (len * 2 <= hi && len * 2 <= x->o->max_op &&
	       len * 2 <= x->o->max_len && below(x, 2))
		len *= 2;
	if (len > x->o->max_len || len > x->o->max_op)
		return;
	nr = x->o->max_len / len;
	if (below(x, 4) == 0)
		flags |= WTIO_DSYNC;
	if (below(x, 4) == 0)
		flags |= WTIO_NOSERIAL;
	write_and_check(x, OP_ATOMIC, below(x, nr) * len, (size_t)len, flags);
}

static void do_async(struct fsx *x)
{
	int n = 1 + (int)below(x, 4), i, got;
	struct {
		uint64_t off;
		size_t len;
		int64_t want;
		bool read;
		uint8_t *rbuf, *expect;
	} req[4];
	uint64_t tags[8];
	int64_t res[8];
	bool wb = false;
	uint8_t *wbuf = x->buf;

	for (i = 0; i < n; i++) {
		unsigned flags = 0;
		int ret;

		pick_range(x, &req[i].off, &req[i].len, x->o->max_len);
		req[i].read = below(x, 4) == 0;
		req[i].rbuf = req[i].expect = NULL;
		if (req[i].read) {
			uint64_t off = req[i].off;
			size_t len = req[i].len, want = off < x->s.size ?
				(x->s.size - off < len ? (size_t)(x->s.size - off) : len) : 0;

			req[i].rbuf = malloc(len);
			req[i].expect = malloc(want + 1);
			if (!req[i].rbuf || !req[i].expect)
				fsx_fail(x->op, "out of memory");
			memcpy(req[i].expect, x->s.data + off, want);
			req[i].want = (int64_t)want;
			fsx_log(x->op, "async[%d] read 0x%llx+0x%zx", i,
				(unsigned long long)off, len);
			ret = x->t->ops->q_read(x->t, req[i].rbuf, len, (off_t)off,
						0, (uint64_t)i);
		} else {
			if (allowed(x, OP_WRITETHROUGH) && below(x, 4))
				flags |= WTIO_WRITETHROUGH;
			if ((flags & WTIO_WRITETHROUGH) && allowed(x, OP_NOSERIAL) &&
			    below(x, 3) == 0)
				flags |= WTIO_NOSERIAL;
			if (allowed(x, OP_DSYNC) && below(x, 5) == 0)
				flags |= WTIO_DSYNC;
			if (allowed(x, OP_DONTCACHE) && below(x, 5) == 0)
				flags |= WTIO_DONTCACHE;
			if (!(flags & WTIO_WRITETHROUGH))
				wb = true;
			fsx_fill(wbuf, req[i].len, x->op * 8 + (uint64_t)i,
				 req[i].off);
			req[i].want = (int64_t)req[i].len;
			fsx_log(x->op, "async[%d] write 0x%llx+0x%zx [%s]", i,
				(unsigned long long)req[i].off, req[i].len,
				flag_str(flags));
			ret = x->t->ops->q_write(x->t, wbuf, req[i].len,
						 (off_t)req[i].off, flags,
						 (uint64_t)i);
			if (!ret)
				fsx_shadow_write(&x->s, wbuf, req[i].len,
						 req[i].off);
			/* The buffer may be reused as soon as submit returns. */
			memset(wbuf, 0xee, req[i].len);
		}
		if (ret)
			fsx_fail(x->op, "async[%d] submit: %s", i, strerror(-ret));
	}
	got = x->t->ops->q_reap_all(x->t, tags, res, 8);
	if (got != n)
		fsx_fail(x->op, "async: reaped %d of %d (%s)", got, n,
			 got < 0 ? strerror(-got) : "");
	for (i = 0; i < got; i++) {
		int k = (int)tags[i];

		if (k < 0 || k >= n || res[i] != req[k].want)
			fsx_fail(x->op, "async[%d]: result %lld, want %lld", k,
				 (long long)res[i], k >= 0 && k < n ?
				 (long long)req[k].want : -1ll);
		if (req[k].read)
			fsx_check_bytes(x->op, "async read vs shadow at submit",
					req[k].rbuf, req[k].expect,
					(size_t)req[k].want, req[k].off);
	}
	for (i = 0; i < n; i++) {
		if (!req[i].read && !wb && !x->o->posix) {
			fsx_check_disk(x->op, x->o->path, &x->s, false,
				       req[i].off, req[i].len);
			x->disk_checks++;
		}
		free(req[i].rbuf);
		free(req[i].expect);
	}
	check_size(x);
	x->counts[OP_ASYNC]++;
}

static void do_truncate(struct fsx *x)
{
	uint64_t len;
	int ret;

	if (below(x, 2) && x->s.size)
		len = below(x, x->s.size);	/* down */
	else
		len = below(x, x->o->max_len + 1);
	if (below(x, 3) == 0)
		len &= ~(uint64_t)4095;
	fsx_log(x->op, "truncate 0x%llx -> 0x%llx", (unsigned long long)x->s.size,
		(unsigned long long)len);
	ret = x->t->ops->truncate(x->t, (off_t)len);
	if (ret)
		fsx_fail(x->op, "truncate to %llu: %s", (unsigned long long)len,
			 strerror(-ret));
	fsx_shadow_truncate(&x->s, len);
	check_size(x);
	/* Around the cut reads back (zeros past a grown end). */
	check_read(x, len > 5000 ? len - 5000 : 0, 10000, 0, 1);
	x->counts[OP_TRUNCATE]++;
}

static void do_fsync(struct fsx *x)
{
	bool data = below(x, 3) == 0;
	int ret;

	fsx_log(x->op, "%s", data ? "fdatasync" : "fsync");
	ret = x->t->ops->fsync(x->t, data);
	if (ret)
		fsx_fail(x->op, "fsync: %s", strerror(-ret));
	check_size(x);
	fsx_check_disk(x->op, x->o->path, &x->s, true, 0, 0);
	x->disk_checks++;
	x->counts[OP_FSYNC]++;
}

static void do_sync_range(struct fsx *x)
{
	uint64_t off;
	size_t len;
	unsigned flags = (unsigned)below(x, 8);
	int ret;

	pick_range(x, &off, &len, x->o->max_len);
	if (below(x, 5) == 0)
		len = 0;	/* to end of file */
	fsx_log(x->op, "sync_range 0x%llx+0x%zx flags %u",
		(unsigned long long)off, len, flags);
	ret = x->t->ops->sync_range(x->t, (off_t)off, (off_t)len, flags);
	if (ret)
		fsx_fail(x->op, "sync_range: %s", strerror(-ret));
	check_size(x);
	if (!x->o->posix && (flags & WTIO_SYNC_RANGE_WRITE) &&
	    (flags & WTIO_SYNC_RANGE_WAIT_AFTER) && off < x->s.size) {
		uint64_t end = len ? off + len : x->s.size;

		if (end > x->s.size)
			end = x->s.size;
		fsx_check_disk(x->op, x->o->path, &x->s, false, off, end - off);
		x->disk_checks++;
	}
	x->counts[OP_SYNC_RANGE]++;
}

static void do_reopen(struct fsx *x)
{
	bool new_ctx = below(x, 2);
	int ret;

	fsx_log(x->op, "close + open%s", new_ctx ? " (new context)" : "");
	ret = x->t->ops->close(x->t, new_ctx);
	if (ret)
		fsx_fail(x->op, "close: %s", strerror(-ret));
	/* A kept closed file is written back later: the disk holds it
	 * once the context is gone. */
	if (new_ctx || !x->o->keep_closed) {
		fsx_check_disk(x->op, x->o->path, &x->s, true, 0, 0);
		x->disk_checks++;
	}
	ret = x->t->ops->open(x->t, false);
	if (ret)
		fsx_fail(x->op, "reopen: %s", strerror(-ret));
	check_size(x);
	x->counts[OP_REOPEN]++;
}

/* Relative weights of the operation types. */
static const unsigned weights[OP_NR] = {
	[OP_READ] = 30, [OP_WRITE] = 16, [OP_WRITETHROUGH] = 12,
	[OP_DSYNC] = 5, [OP_NOSERIAL] = 6, [OP_DONTCACHE] = 6,
	[OP_ATOMIC] = 5, [OP_ASYNC] = 5, [OP_TRUNCATE] = 4, [OP_FSYNC] = 3,
	[OP_SYNC_RANGE] = 3, [OP_REOPEN] = 1,
};

static enum fsx_op pick_op(struct fsx *x, unsigned total)
{
	unsigned r = (unsigned)below(x, total);
	int i;

	for (i = 0; i < OP_NR; i++) {
		if (x->o->excluded[i])
			continue;
		if (r < weights[i])
			return (enum fsx_op)i;
		r -= weights[i];
	}
	return OP_READ;
}

int fsx_run(const struct fsx_opts *o, struct fsx_target *t)
{
	struct fsx x = { .o = o, .t = t, .rng = o->seed };
	struct fsx_opts eff = *o;
	bool tty = isatty(1) && !o->quiet;
	unsigned total = 0;
	int i, ret, idx = 0;

	fsx_seed = o->seed;
	x.o = &eff;
	if (o->procs > 1)
		fsx_shadow_init_shared(&x.s, o->max_len);
	else
		fsx_shadow_init(&x.s, o->max_len);
	x.buf = malloc(o->max_op + 64);
	x.buf2 = malloc(o->max_len + 10000 + 64);
	if (!x.buf || !x.buf2) {
		fprintf(stderr, "wtio-fsx: out of memory\n");
		return 2;
	}
	if (o->tight && fsx_tight_start(o->path))
		return 2;
	ret = t->ops->open(t, true);
	if (ret)
		return 2;
	t->ops->atomic_units(t, &x.atomic_min, &x.atomic_max);
	/* An untorn write is one unit at least: none fits in a file or an
	 * operation smaller than that (the buffer holds max_op). */
	if (!x.atomic_max || x.atomic_min > o->max_len ||
	    x.atomic_min > o->max_op)
		eff.excluded[OP_ATOMIC] = true;
	for (i = 0; i < OP_NR; i++)
		if (!eff.excluded[i])
			total += weights[i];
	if (!total) {
		fprintf(stderr, "wtio-fsx: every operation type is excluded\n");
		return 2;
	}
	if (!o->quiet)
		printf("wtio-fsx: %s, seed %llu, %llu ops, file length %llu, op size "
		       "%llu, folio %u, cache %llu%s\n", t->ops->name,
		       (unsigned long long)o->seed, (unsigned long long)o->nr_ops,
		       (unsigned long long)o->max_len, (unsigned long long)o->max_op,
		       o->folio_size, (unsigned long long)(o->cache_size ?
		       o->cache_size : (uint64_t)o->folio_size * 32),
		       eff.excluded[OP_ATOMIC] && !o->excluded[OP_ATOMIC] ?
		       " (no atomic writes on this file)" : "");
	if (o->procs > 1) {
		if (!o->quiet)
			printf("wtio-fsx: %d processes on the file, %llu ops each, "
			       "one shadow\n", o->procs,
			       (unsigned long long)o->nr_ops);
		/* the others inherit the open descriptor (one description) */
		idx = fsx_procs_start(o->procs);
		x.rng = o->seed + (uint64_t)idx * 0xd1b54a32d192ed03ull;
		if (idx)
			tty = false;
	}
	for (x.op = 1; x.op <= o->nr_ops; x.op++) {
		enum fsx_op op;

		/* Now and then a new amount of free space, none at times. */
		if (o->tight && (x.op == 1 || below(&x, 32) == 0)) {
			uint64_t want = below(&x, 4) ?
					below(&x, o->tight + 1) & ~4095ull : 0;

			fsx_log(x.op, "tight: %llu bytes free (wanted %llu)",
				(unsigned long long)fsx_tight_set(want),
				(unsigned long long)want);
		}
		op = pick_op(&x, total);
		fsx_shadow_lock(&x.s);
		switch (op) {
		case OP_READ: do_read(&x); break;
		case OP_WRITE: case OP_WRITETHROUGH: case OP_DSYNC:
		case OP_NOSERIAL: case OP_DONTCACHE:
			do_write(&x, op);
			break;
		case OP_ATOMIC: do_atomic(&x); break;
		case OP_ASYNC: do_async(&x); break;
		case OP_TRUNCATE: do_truncate(&x); break;
		case OP_FSYNC: do_fsync(&x); break;
		case OP_SYNC_RANGE: do_sync_range(&x); break;
		case OP_REOPEN: do_reopen(&x); break;
		default: break;
		}
		fsx_shadow_unlock(&x.s);
		if (tty && x.op % 500 == 0) {
			printf("\r%llu/%llu ops", (unsigned long long)x.op,
			       (unsigned long long)o->nr_ops);
			fflush(stdout);
		}
	}
	x.op = o->nr_ops + 1;
	fsx_log(x.op, "final close");
	fsx_shadow_lock(&x.s);
	ret = t->ops->close(t, true);
	if (ret)
		fsx_fail(x.op, "final close: %s", strerror(-ret));
	fsx_check_disk(x.op, o->path, &x.s, true, 0, 0);
	x.disk_checks++;
	fsx_shadow_unlock(&x.s);
	if (idx) {
		if (!o->quiet)
			printf("wtio-fsx: process %d of %d: %llu ops OK\n", idx,
			       o->procs, (unsigned long long)o->nr_ops);
		exit(0);
	}
	if (o->procs > 1) {
		if (fsx_procs_wait()) {
			fprintf(stderr, "wtio-fsx: seed %llu: FAILURE in another "
				"process (above)\n", (unsigned long long)o->seed);
			return 1;
		}
		/* every process closed it: the whole file, exact size */
		fsx_shadow_lock(&x.s);
		fsx_check_disk(x.op, o->path, &x.s, true, 0, 0);
		fsx_shadow_unlock(&x.s);
		x.disk_checks++;
	}
	if (tty)
		printf("\r%40s\r", "");
	printf("wtio-fsx: seed %llu: %llu ops OK%s, %llu disk checks, %llu NOWAIT "
	       "EAGAIN:", (unsigned long long)o->seed,
	       (unsigned long long)o->nr_ops, o->procs > 1 ?
	       " in each process" : "", (unsigned long long)x.disk_checks,
	       (unsigned long long)x.nowait_eagain);
	for (i = 0; i < OP_NR; i++)
		printf(" %s %llu", fsx_op_names[i], (unsigned long long)x.counts[i]);
	if (o->adaptive)
		printf(" adaptive-writethrough %llu",
		       (unsigned long long)fsx_adaptive_writethrough);
	if (o->tight)
		printf(" tight: refused %llu cut %llu",
		       (unsigned long long)x.refused,
		       (unsigned long long)x.cut);
	printf("\n");
	fsx_tight_end();
	free(x.buf);
	free(x.buf2);
	fsx_shadow_free(&x.s);
	return 0;
}
