/* SPDX-License-Identifier: MIT */
/*
 * read_io.c - filling folios from disk: direct reads resubmitted to the
 * end, the zeros past i_size, the blocks of a folio below a size.
 */
#include <string.h>

#include "read_io.h"
#include "folio.h"
#include "ctx.h"
#include "inode.h"
#include "read.h"
#include "stats.h"
#include "stripe.h"

static ssize_t read_full(struct wtio_inode *inode, struct iovec *iov,
			 int iovcnt, off_t off, size_t len)
{
	struct wtio_ctx *ctx = inode->ctx;
	uint64_t sw = wtio_stripe_width(&inode->geo, inode->block_size);
	uint64_t dio_align = inode->geo.dio_offset_align ?
			     inode->geo.dio_offset_align : 512;
	struct iovec part[WTIO_IO_MAX_IOVECS];
	size_t done = 0;

	while (done < len) {
		size_t want = len - done, got = 0;
		int n = 0, i;
		ssize_t res;

		/* Reads follow the stripe rule too (stripe.h). */
		if (sw) {
			size_t cut = (size_t)wtio_stripe_cut(sw, UINT64_MAX,
					(uint64_t)(off + (off_t)done), want);

			if (cut < want) {
				want = cut;
				wtio_stat_add(ctx, stripe_splits, 1);
			}
		}
		for (i = 0; i < iovcnt && got < want; i++) {
			part[n] = iov[i];
			if (part[n].iov_len > want - got)
				part[n].iov_len = want - got;
			got += part[n++].iov_len;
		}
		struct wtio_io_req req = {
			.op = WTIO_IO_READ, .fd = inode->fd,
			.off = off + (off_t)done, .iov = part, .iovcnt = n,
		};
		res = wtio_io_sync(&ctx->io, &req);
		wtio_stat_add(ctx, read_ios, 1);
		if (res < 0)
			return res;
		if (res == 0)
			break;
		wtio_stat_add(ctx, bytes_read, (uint64_t)res);
		done += (size_t)res;
		/* A direct read that ends off an alignment boundary hit the
		 * backing file's end (it can be shorter than i_size while
		 * dirty data past it is cached): retrying from there would
		 * be an unaligned direct read (-EINVAL). Keep what came
		 * when it was under one unit, else go back to the last
		 * aligned offset and read on from there. At or past wtio's
		 * size nothing more is wanted: what lies past i_size is
		 * zeroed whatever the disk holds (wtio_zero_past_eof), so
		 * reading on would only read the same tail again, one more
		 * small I/O for every file of an unaligned size. */
		if ((uint64_t)(off + (off_t)done) % dio_align) {
			size_t back = (size_t)((uint64_t)(off + (off_t)done) %
					       dio_align);

			if ((size_t)res <= back ||
			    off + (off_t)done >= wtio_inode_size(inode))
				break;
			done -= back;
			res -= (ssize_t)back;
		}
		/* Advance the caller's iovecs past what was read. */
		size_t skip = (size_t)res;

		while (iovcnt && skip >= iov->iov_len) {
			skip -= iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt) {
			iov->iov_base = (char *)iov->iov_base + skip;
			iov->iov_len -= skip;
		}
	}
	return (ssize_t)done;
}

/*
 * Every folio a read fills is locked across its I/O: counted in
 * nr_read_io meanwhile, so that an allocator that finds only such folios
 * waits for them instead of failing (cache.c). One iovec per folio.
 */
ssize_t wtio_read_full(struct wtio_inode *inode, struct iovec *iov,
		       int iovcnt, off_t off, size_t len)
{
	struct wtio_ctx *ctx = inode->ctx;
	ssize_t res;

	atomic_fetch_add(&ctx->nr_read_io, iovcnt);
	res = read_full(inode, iov, iovcnt, off, len);
	atomic_fetch_sub(&ctx->nr_read_io, iovcnt);
	return res;
}

int wtio_iov_merge(struct iovec *iov, int n)
{
	int i, m = 0;

	for (i = 0; i < n; i++) {
		if (m && (char *)iov[m - 1].iov_base + iov[m - 1].iov_len ==
			 iov[i].iov_base) {
			iov[m - 1].iov_len += iov[i].iov_len;
			continue;
		}
		iov[m++] = iov[i];
	}
	return m;
}

ssize_t wtio_read_folios(struct wtio_inode *inode, struct iovec *iov,
			 int nr_folios, off_t off, size_t len)
{
	struct wtio_ctx *ctx = inode->ctx;
	ssize_t res;

	atomic_fetch_add(&ctx->nr_read_io, nr_folios);
	res = read_full(inode, iov, wtio_iov_merge(iov, nr_folios), off, len);
	atomic_fetch_sub(&ctx->nr_read_io, nr_folios);
	return res;
}

void wtio_zero_past_eof(struct wtio_inode *inode, struct wtio_folio *folio,
			uint32_t from, uint32_t to, size_t got)
{
	int64_t base = (int64_t)atomic_load(&folio->index) <<
		       inode->folio_shift;
	int64_t eof = wtio_inode_size(inode) - base;
	uint32_t z = from + (uint32_t)got;

	/* Short read: the disk file ends there. Past i_size: the disk may
	 * hold a block tail that wtio's size does not cover. */
	if (eof < (int64_t)z)
		z = eof <= (int64_t)from ? from : (uint32_t)eof;
	if (z < to)
		memset(folio->data + z, 0, to - z);
}

int wtio_folio_read_blocks(struct wtio_inode *inode, struct wtio_folio *folio,
			   uint64_t mask)
{
	uint64_t todo = mask & ~atomic_load(&folio->ifs_uptodate);
	uint32_t bs = inode->block_size;
	int64_t base = (int64_t)atomic_load(&folio->index) <<
		       inode->folio_shift;

	while (todo) {
		uint32_t first = (uint32_t)__builtin_ctzll(todo);
		/* ctz(0) is undefined: a run of all 64 blocks is n = 64. */
		uint32_t n = ~(todo >> first) ?
			(uint32_t)__builtin_ctzll(~(todo >> first)) : 64u;
		uint64_t run = (first + n >= 64) ? ~0ull << first :
			((1ull << n) - 1) << first;
		uint32_t from = first * bs, to = (first + n) * bs;
		struct iovec v = { folio->data + from, to - from };
		ssize_t got = wtio_read_full(inode, &v, 1, base + from, to - from);

		if (got < 0)
			return (int)got;
		wtio_zero_past_eof(inode, folio, from, to, (size_t)got);
		wtio_ifs_set_uptodate(inode, folio, run);
		todo &= ~run;
	}
	return 0;
}

uint64_t wtio_blocks_below(struct wtio_inode *inode, uint64_t index,
			   int64_t size)
{
	int64_t base = (int64_t)index << inode->folio_shift;
	int64_t in = size - base;

	if (in <= 0)
		return 0;
	if (in >= inode->folio_size)
		return wtio_ifs_all(inode);
	return wtio_ifs_mask(inode, 0, (uint32_t)in);
}

