/* SPDX-License-Identifier: MIT */
/*
 * optparse.c - the generic option parser: one function turns a value into
 * the field a table row points at, by the row's type, with the error
 * message that names the option; two more print the table as usage text
 * and as the man page's option list, so that neither can drift from what
 * the parser accepts.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "optparse.h"

int parse_size(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!s || !isdigit((unsigned char)*s))	/* strtoull takes " -1" */
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	uint64_t mult = 1;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'b': mult = 1; end++; goto tail_done;
	case 'k': mult = 1ull << 10; break;
	case 'm': mult = 1ull << 20; break;
	case 'g': mult = 1ull << 30; break;
	case 't': mult = 1ull << 40; break;
	default: return -1;
	}
	if (*end) {
		end++;
		if (!strcasecmp(end, "ib") || !strcasecmp(end, "b") || !*end)
			end += strlen(end);
	}
tail_done:
	if (*end)
		return -1;
	if (v && mult > UINT64_MAX / v)
		return -1;
	*out = v * mult;
	return 0;
}

int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Seconds: "10", "10s", "1.5", "2m", "500ms". */
static int parse_time(const char *s, double *out)
{
	char *end;
	errno = 0;
	/* Decimal only: strtod also takes "nan", "inf", "0x10" and blanks. */
	if (!s || (!isdigit((unsigned char)*s) && *s != '.') || strpbrk(s, "xX"))
		return -1;
	double v = strtod(s, &end);
	if (errno || end == s || !(v >= 0))
		return -1;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		;
	else if (!strcmp(end, "ms"))
		v /= 1000;
	else if (!strcmp(end, "m"))
		v *= 60;
	else
		return -1;
	*out = v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	if (!s || !strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no")) {
		*out = false;
		return 0;
	}
	return -1;
}

const struct opt_def *opt_find(const struct opt_def *t, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (t[i].type != OT_SECTION &&
		    (!strcmp(t[i].name, name) || (t[i].alias && !strcmp(t[i].alias, name))))
			return &t[i];
	return NULL;
}

int opt_has_arg(const struct opt_def *d)
{
	switch (d->type) {
	case OT_SET: case OT_SETINT: case OT_ACTION: case OT_SECTION:
		return 0;
	case OT_BOOL:
		return 2;
	default:
		return 1;
	}
}

/* "a or b" for two names, else "one of a, b, c". */
static void names_text(char *buf, size_t len, const char *const *names, const char *sep2,
		       const char *sep)
{
	int n = 0;
	size_t o = 0;
	while (names[n])
		n++;
	buf[0] = 0;
	for (int i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s",
				      i == 0 ? "" : (n == 2 ? sep2 : sep), names[i]);
}

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int opt_set(const struct opt_def *d, void *base, const char *val, char *err,
	    size_t errlen)
{
	void *field = (char *)base + d->off;
	unsigned long long u;
	uint64_t sz;
	double t;
	bool b;

	if (opt_has_arg(d) == 1 && !val)
		BAD("option '--%s' needs a value (--%s=VALUE)", d->name, d->name);
	switch (d->type) {
	case OT_SIZE:
		if (parse_size(val, &sz) || sz < d->min || (d->max && sz > d->max) ||
		    (d->pow2 && (sz & (sz - 1))))
			BAD("--%s: '%s' is not %s", d->name, val,
			    d->what ? d->what : "a size (examples: 256M, 2G)");
		*(uint64_t *)field = sz;
		return 0;
	case OT_UINT: {
		unsigned long long max = d->max ? d->max : UINT_MAX;
		if (parse_uint(val, max, &u) || u < d->min) {
			if (d->what)
				BAD("--%s: '%s' is not %s", d->name, val, d->what);
			BAD("--%s: '%s' is not a number from %llu to %llu", d->name, val,
			    (unsigned long long)d->min, max);
		}
		*(unsigned int *)field = (unsigned int)u;
		return 0;
	}
	case OT_TIME:
		if (parse_time(val, &t) || (d->max && t > (double)d->max))
			BAD("--%s: '%s' is not a time (examples: 10, 10s, 500ms, 2m)", d->name, val);
		*(double *)field = t;
		return 0;
	case OT_BOOL:
		if (parse_bool(val, &b))
			BAD("--%s: '%s' is not 0 or 1", d->name, val);
		*(bool *)field = b;
		return 0;
	case OT_SET:
		*(bool *)field = true;
		return 0;
	case OT_SETINT:
		*(int *)field = (int)d->min;
		return 0;
	case OT_ENUM: {
		char list[256];
		for (int i = 0; d->names[i]; i++)
			if (!strcmp(val, d->names[i])) {
				*(int *)field = i;
				return 0;
			}
		names_text(list, sizeof(list), d->names, " or ", ", ");
		BAD("--%s: '%s' is not %s%s", d->name, val,
		    d->names[0] && d->names[1] && d->names[2] ? "one of " : "", list);
	}
	case OT_STR:
		*(const char **)field = val;
		return 0;
	case OT_FUNC:
	case OT_ACTION:
		return d->cb(d, base, val, err, errlen);
	case OT_SECTION:
		break;
	}
	BAD("--%s: not an option", d->name);
}

/* The value's placeholder: .arg, or the enum's names, or 0|1. */
static void arg_text(const struct opt_def *d, char *buf, size_t len)
{
	buf[0] = 0;
	if (d->arg)
		snprintf(buf, len, "%s", d->arg);
	else if (d->type == OT_ENUM)
		names_text(buf, len, d->names, "|", "|");
	else if (d->type == OT_BOOL)
		snprintf(buf, len, "0|1");
}

static void wrap(FILE *f, const char *text, int col, int indent, int width)
{
	const char *p = text;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*w && *w != ' ')
			w++;
		int wl = (int)(w - p);
		if (col > indent && col + 1 + wl > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fprintf(f, "%.*s", wl, p);
		col += wl;
		p = w;
	}
	fputc('\n', f);
}

void opt_print_usage(FILE *f, const struct opt_def *t, int n)
{
	enum { INDENT = 23, WIDTH = 79 };
	char arg[256], left[320], text[1024];

	for (int i = 0; i < n; i++) {
		const struct opt_def *d = &t[i];
		if (d->type == OT_SECTION) {
			fprintf(f, "%s%s\n", i ? "\n" : "", d->help);
			continue;
		}
		arg_text(d, arg, sizeof(arg));
		if (!arg[0])
			snprintf(left, sizeof(left), "  --%s", d->name);
		else if (opt_has_arg(d) == 2)
			snprintf(left, sizeof(left), "  --%s[=%s]", d->name, arg);
		else
			snprintf(left, sizeof(left), "  --%s=%s", d->name, arg);
		snprintf(text, sizeof(text), "%s%s%s%s", d->help,
			 d->def ? " Default: " : "", d->def ? d->def : "", d->def ? "." : "");
		int col = fprintf(f, "%s", left);
		if (col >= INDENT - 1) {
			fprintf(f, "\n%*s", INDENT, "");
			col = INDENT;
		} else {
			fprintf(f, "%*s", INDENT - col, "");
			col = INDENT;
		}
		wrap(f, text, col, INDENT, WIDTH);
	}
}

/* Text for troff: '-' and '\' escaped, no line starting with '.'. */
static void troff(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else
			fputc(*s, f);
	}
}

void opt_print_man(FILE *f, const struct opt_def *t, int n)
{
	char arg[256];

	for (int i = 0; i < n; i++) {
		const struct opt_def *d = &t[i];
		if (d->type == OT_SECTION) {
			fprintf(f, ".SH %s\n", d->name);
			if (d->more) {
				troff(f, d->more);
				fputc('\n', f);
			}
			continue;
		}
		arg_text(d, arg, sizeof(arg));
		fputs(".TP\n.B \\-\\-", f);
		troff(f, d->name);
		if (arg[0]) {
			fputs(opt_has_arg(d) == 2 ? "\\fR[=\\fI" : "=\\fI", f);
			troff(f, arg);
			fputs(opt_has_arg(d) == 2 ? "\\fR]" : "\\fR", f);
		}
		if (d->alias) {
			fputs("\\fR (also \\fB\\-\\-", f);
			troff(f, d->alias);
			fputs("\\fR)", f);
		}
		fputs("\n\\&", f);
		troff(f, d->help);
		if (d->def) {
			fputs(" Default: ", f);
			troff(f, d->def);
			fputs(".", f);
		}
		if (d->more) {
			fputc(' ', f);
			troff(f, d->more);
		}
		fputc('\n', f);
	}
}
