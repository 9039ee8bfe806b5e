/* SPDX-License-Identifier: MIT */
/*
 * experiments.c - turn a suite's data (or the command line's job) into the
 * experiments to run: each preset's options set through the option table,
 * then the command line's job options over them, then the checks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "experiments.h"
#include "suites.h"

static int preset_apply(struct experiment *ex, const struct suite_exp *e,
			char *err, size_t errlen)
{
	size_t o = 0;

	snprintf(ex->name, sizeof(ex->name), "%s", e->name);
	snprintf(ex->title, sizeof(ex->title), "%s", e->title);
	job_defaults(&ex->job);
	ex->args[0] = 0;
	for (const struct suite_opt *a = e->opts; a->name; a++) {
		if (job_set(&ex->job, a->name, a->val, err, errlen))
			return -1;
		if (o < sizeof(ex->args))
			o += (size_t)snprintf(ex->args + o, sizeof(ex->args) - o, "%s--%s=%s",
					      o ? " " : "", a->name, a->val);
	}
	return 0;
}

int experiments_build(const struct bench_opts *o, struct experiment **out,
		      char *err, size_t errlen)
{
	struct experiment *ex;
	int n = 0;

	if (!o->suite) {
		ex = calloc(1, sizeof(*ex));
		if (!ex) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		snprintf(ex->name, sizeof(ex->name), "job");
		snprintf(ex->title, sizeof(ex->title), "Command-line job");
		ex->job = o->job;
		if (job_check(&ex->job, err, errlen)) {
			free(ex);
			return -1;
		}
		*out = ex;
		return 1;
	}
	const struct suite *s = suite_find(o->suite);
	if (!s) {
		snprintf(err, errlen, "unknown suite '%s'", o->suite);
		return -1;
	}
	for (const struct suite_exp *e = s->exps; e->name; e++)
		n++;
	ex = calloc((size_t)n, sizeof(*ex));
	if (!ex) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (preset_apply(&ex[i], &s->exps[i], err, errlen) ||
		    job_apply_args(&ex[i].job, o, err, errlen) ||
		    job_check(&ex[i].job, err, errlen)) {
			free(ex);
			return -1;
		}
	}
	*out = ex;
	return n;
}
