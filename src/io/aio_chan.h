/* SPDX-License-Identifier: MIT */
/*
 * aio_chan.h - channels over Linux AIO (io_aio_chan.c): what
 * io_backend.c opens instead of the backend's own channels when the
 * context asks for them (WTIO_CONFIG_AIO_CHANNELS).
 */
#ifndef WTIO_IO_AIO_CHAN_H
#define WTIO_IO_AIO_CHAN_H

#include "ops.h"

/* Only chan_* are set: a provider of channels, never a context's backend. */
extern const struct wtio_io_ops wtio_io_aio_chan_ops;

/* NULL with *err set (-ENOSYS, -EAGAIN past fs.aio-max-nr, -ENOMEM). */
struct wtio_io_chan *wtio_aio_chan_open(struct wtio_io_backend *be,
					unsigned int depth, int *err);

#endif /* WTIO_IO_AIO_CHAN_H */
