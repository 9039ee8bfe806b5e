/* SPDX-License-Identifier: MIT */
/*
 * optparse.h - one generic option parser driven by a table (fio's habit):
 * each row names an option, its type, where its value goes (an offset into
 * a struct), its default and its help. The same rows make the usage text
 * and the man page's option list.
 */
#ifndef WTIO_BENCH_OPTPARSE_H
#define WTIO_BENCH_OPTPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum opt_type {
	OT_SECTION,	/* not an option: a heading of the usage and man page */
	OT_SIZE,	/* uint64_t from "4k", "1M" (binary units) */
	OT_UINT,	/* unsigned int (or uint32_t) */
	OT_TIME,	/* double seconds from "10", "500ms", "2m" */
	OT_BOOL,	/* bool; the value is optional, alone it means 1 */
	OT_SET,		/* bool set to true; takes no value */
	OT_SETINT,	/* int set to .min; takes no value */
	OT_ENUM,	/* int: the value's index in .names */
	OT_STR,		/* const char *: the value as given */
	OT_FUNC,	/* parsed by .cb */
	OT_ACTION,	/* takes no value; .cb runs at once (--help) */
};

struct opt_def;
/* base: the struct the table's offsets point into. */
typedef int (*opt_cb)(const struct opt_def *d, void *base, const char *val,
		      char *err, size_t errlen);

struct opt_def {
	const char *name;
	enum opt_type type;
	int scope;		/* which struct .off is into (caller's choice) */
	size_t off;
	const char *def;	/* the default, as a value; NULL: zero */
	const char *arg;	/* the value's name in the help: SIZE, N */
	const char *help;	/* one or more sentences */
	const char *more;	/* man page only: further detail */
	uint64_t min, max;	/* OT_SIZE / OT_UINT range (max 0: none) */
	bool pow2;		/* OT_SIZE: a power of two */
	const char *what;	/* the error's "is not WHAT" (OT_SIZE, OT_UINT) */
	const char *const *names;	/* OT_ENUM values, NULL ended */
	const char *alias;	/* another spelling (fio's), or NULL */
	opt_cb cb;
};

/* The row named name (or its alias) among n rows, or NULL. */
const struct opt_def *opt_find(const struct opt_def *t, int n, const char *name);

/*
 * Parse val (NULL: given without a value) into base by d's type. Returns 0,
 * or -1 with "--name: ..." in err.
 */
int opt_set(const struct opt_def *d, void *base, const char *val, char *err,
	    size_t errlen);

/* Whether the option takes a value: 0 no, 1 required, 2 optional. */
int opt_has_arg(const struct opt_def *d);

/* The usage text's option lines, wrapped to 79 columns. */
void opt_print_usage(FILE *f, const struct opt_def *t, int n);

/* The man page's option list (troff), the same rows. */
void opt_print_man(FILE *f, const struct opt_def *t, int n);

/* "4k" -> 4096 (binary units; also "4KiB", "4K", "1M", "2g"). -1 on error. */
int parse_size(const char *s, uint64_t *out);
/* A decimal number up to max. -1 on error. */
int parse_uint(const char *s, unsigned long long max, unsigned long long *out);

#endif
