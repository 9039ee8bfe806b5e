/* SPDX-License-Identifier: MIT */
/*
 * shared_check.h - CHECK and P for the checkers of one cache per program
 * (shared_matrix.c, shared_misc.c); the includer defines die(), which
 * reports in its own words and exits 1.
 */
#ifndef SHARED_CHECK_H
#define SHARED_CHECK_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

static void die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

#define CHECK(c) do { if (!(c)) die("%s:%d: %s (errno %d %s)", __FILE__, \
	__LINE__, #c, errno, strerror(errno)); } while (0)

/* DIR/NAME, allocated (a test's few paths are never freed) */
static inline char *P(const char *dir, const char *name)
{
	char *p;

	CHECK(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

#endif
