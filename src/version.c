/* SPDX-License-Identifier: MIT */
/* version.c - run-time version checks and error text. */
#include <limits.h>
#include <string.h>

#include "export.h"

WTIO_EXPORT int wtio_version_major(void)
{
	return WTIO_VERSION_MAJOR;
}

WTIO_EXPORT int wtio_version_minor(void)
{
	return WTIO_VERSION_MINOR;
}

WTIO_EXPORT bool wtio_check_version(int major, int minor)
{
	return major == WTIO_VERSION_MAJOR && minor <= WTIO_VERSION_MINOR;
}

WTIO_EXPORT const char *wtio_strerror(int err)
{
	const char *s;

	/* -INT_MIN does not exist: no errno is that large anyway. */
	if (err == INT_MIN)
		return "Unknown error";
	if (err > 0)
		err = -err;
	/* strerrordesc_np is thread safe and never formats into a buffer. */
	s = strerrordesc_np(-err);
	return s ? s : "Unknown error";
}
