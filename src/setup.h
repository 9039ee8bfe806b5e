/* SPDX-License-Identifier: MIT */
/* setup.h - creating and freeing a context (setup.c), for the test
 * library, which makes contexts on backends of its own. */
#ifndef WTIO_SETUP_H
#define WTIO_SETUP_H

struct wtio_ctx;

/* Free ctx and all it holds (flushers, backend, cache, every handle),
 * writing nothing back: wtio_ctx_destroy once nothing is open. */
void wtio_ctx_free(struct wtio_ctx *ctx);

#endif /* WTIO_SETUP_H */
