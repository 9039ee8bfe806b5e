/* SPDX-License-Identifier: MIT */
/*
 * shim_env.h - the one check of the environment's switches (WTIO_DSYNC,
 * WTIO_DEBUG, WTIO_DISABLE, WTIO_LARGE_FOLIOS, WTIO_IO_CHANNEL), shared
 * by wtio-run and the preload library so that both refuse the same
 * values. A value neither knows would otherwise read as "off":
 * WTIO_DSYNC=yes would give a program no durability at return and
 * WTIO_LARGE_FOLIOS=no would leave large folios on, without a word.
 */
#ifndef WTIO_SHIM_ENV_H
#define WTIO_SHIM_ENV_H

#include <stdlib.h>
#include <string.h>

/* NULL when every switch set holds a value it takes (unset and empty
 * are the default), else the first variable that does not; *want says
 * which values it takes. */
static inline const char *shim_env_bad_switch(const char **want)
{
	static const char *const bools[] = {
		"WTIO_DSYNC", "WTIO_DEBUG", "WTIO_DISABLE", "WTIO_LARGE_FOLIOS",
	};
	const char *v;
	unsigned int i;

	for (i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
		v = getenv(bools[i]);
		if (v && *v && strcmp(v, "0") && strcmp(v, "1")) {
			*want = "0 or 1";
			return bools[i];
		}
	}
	v = getenv("WTIO_IO_CHANNEL");
	if (v && *v && strcmp(v, "aio") && strcmp(v, "io_uring")) {
		*want = "aio or io_uring";
		return "WTIO_IO_CHANNEL";
	}
	return NULL;
}

#endif
