/* SPDX-License-Identifier: MIT */
/* export.h - the public calls wtio.h declares, and the mark of those
 * libwtio.so exports (all else is hidden). */
#ifndef WTIO_EXPORT_H
#define WTIO_EXPORT_H

#include <wtio.h>

#define WTIO_EXPORT __attribute__((visibility("default")))

#endif /* WTIO_EXPORT_H */
