/* SPDX-License-Identifier: MIT */
/* file.h - opening, truncating and closing a handle (file.c). */
#ifndef WTIO_FILE_H
#define WTIO_FILE_H

#include <sys/types.h>

struct wtio_ctx;
struct wtio_file;

int wtio_file_open(struct wtio_ctx *ctx, const char *path, int oflags,
		   mode_t mode, unsigned int default_flags,
		   struct wtio_file **filep);
int wtio_file_close(struct wtio_file *file);
int wtio_file_truncate(struct wtio_file *file, off_t length);

#endif /* WTIO_FILE_H */
