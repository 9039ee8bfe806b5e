/* SPDX-License-Identifier: MIT */
/*
 * raid_io.c - the ops table that puts a wtio context over the RAID: the
 * psync engine with an executor that sends each request to raid_files.
 */
#include "raid_io.h"

#include <errno.h>

#include "io/ops.h"

static ssize_t raid_exec(struct wtio_io_backend *be,
			 const struct wtio_io_req *req)
{
	struct raid_files *rf = be->arg;
	ssize_t r;

	switch (req->op) {
	case WTIO_IO_READ:
		return raid_files_rw(rf, 0, req->fd, req->iov, req->iovcnt,
				     req->off);
	case WTIO_IO_WRITE:
		r = raid_files_rw(rf, 1, req->fd, req->iov, req->iovcnt,
				  req->off);
		if (r > 0 && (req->rw_flags & RWF_DSYNC)) {
			int ret = raid_files_sync(rf, req->fd, 1);

			if (ret)
				return ret;
		}
		return r;
	case WTIO_IO_FSYNC:
		return raid_files_sync(rf, req->fd, 0);
	case WTIO_IO_FDATASYNC:
		return raid_files_sync(rf, req->fd, 1);
	}
	return -EINVAL;
}

static int raid_submit(struct wtio_io_backend *be, struct wtio_io_req **reqs,
		       unsigned int nr)
{
	return wtio_psync_submit_exec(be, reqs, nr, raid_exec);
}

static int raid_set_size(struct wtio_io_backend *be, int fd, off_t size)
{
	return raid_files_set_size(be->arg, fd, size);
}

static const struct wtio_io_ops raid_ops = {
	.version	= WTIO_IO_OPS_VERSION,
	.name		= "raid",
	.caps		= 0,
	.setup		= wtio_psync_setup,
	.teardown	= wtio_psync_teardown,
	.submit		= raid_submit,
	.reap		= wtio_psync_reap,
	.inflight	= wtio_psync_inflight,
	.set_size	= raid_set_size,
};

int raid_ctx_create(const struct wtio_config *cfg, struct raid_files *rf,
		    struct wtio_ctx **ctxp)
{
	struct raid_vol *v = raid_files_vol(rf);
	struct wtio_config c;

	if (cfg)
		c = *cfg;
	else
		wtio_config_init(&c);
	if (!c.stripe_unit) {
		c.stripe_unit = raid_chunk(v);
		c.stripe_width = (uint32_t)raid_stripe_width(v);
	}
	return wtio_ctx_create_io(&c, &raid_ops, rf, ctxp);
}
