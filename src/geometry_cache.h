/* SPDX-License-Identifier: MIT */
/* geometry_cache.h - a file's geometry with the filesystem's part probed
 * once per mount (geometry_cache.c). */
#ifndef WTIO_GEOMETRY_CACHE_H
#define WTIO_GEOMETRY_CACHE_H

#include "geometry.h"

/* The geometry and the size limit of the regular file behind fd, whose
 * statx is *st: the same answer as wtio_geometry_probe and
 * wtio_geometry_max_bytes give. */
void wtio_geometry_probe_cached(int fd, const struct wtio_file_stat *st,
				struct wtio_geometry *geo, int64_t *max_bytes);

#endif
