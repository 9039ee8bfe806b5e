/* SPDX-License-Identifier: MIT */
/*
 * figures.c - figures of a run and the median/min/max of repeated runs.
 */
#include <stdlib.h>
#include <string.h>

#include "figures.h"

double res_mib_s(const struct mode_result *r)
{
	return r->elapsed_s > 0 ? (double)r->c.bytes / 1048576.0 / r->elapsed_s : 0;
}

double res_iops(const struct mode_result *r)
{
	return r->elapsed_s > 0 ? (double)r->c.ops / r->elapsed_s : 0;
}

double res_cpu_per_gib(const struct mode_result *r)
{
	return r->c.bytes ? r->cpu_s / ((double)r->c.bytes / (1024.0 * 1024 * 1024)) : 0;
}

double fig_value(const struct mode_result *r, enum fig k)
{
	double s = r->elapsed_s > 0 ? r->elapsed_s : 0;
	switch (k) {
	case FIG_MIB_S: return res_mib_s(r);
	case FIG_IOPS: return res_iops(r);
	case FIG_READ_MIB_S: return s ? (double)r->c.read_bytes / 1048576.0 / s : 0;
	case FIG_WRITE_MIB_S: return s ? (double)r->c.write_bytes / 1048576.0 / s : 0;
	case FIG_P50: return (double)hist_percentile(&r->hist, 50) / 1000.0;
	case FIG_P99: return (double)hist_percentile(&r->hist, 99) / 1000.0;
	case FIG_P999: return (double)hist_percentile(&r->hist, 99.9) / 1000.0;
	case FIG_CPU_GIB: return res_cpu_per_gib(r);
	case NR_FIG: break;
	}
	return 0;
}

bool has_figures(const struct mode_result *r)
{
	return (r->status == RS_OK || r->status == RS_INTERRUPTED) && r->c.ops > 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

void cell_summarize(const struct mode_result *runs, int n, struct mode_result *out)
{
	int use[64], m = 0, tried = 0, interrupted = 0;
	const struct mode_result *worst = NULL;

	for (int i = 0; i < n; i++) {
		const struct mode_result *r = &runs[i];
		if (r->status == RS_NOT_RUN)
			continue;
		tried++;
		if (r->status == RS_INTERRUPTED)
			interrupted++;
		if (r->status == RS_ERROR || (r->status == RS_UNSUPPORTED && !worst))
			worst = worst && worst->status == RS_ERROR ? worst : r;
	}
	for (int pass = 0; pass < 2 && !m; pass++)
		for (int i = 0; i < n && m < 64; i++)
			if (has_figures(&runs[i]) && (pass || runs[i].status == RS_OK))
				use[m++] = i;
	if (worst && worst->status == RS_ERROR)
		m = 0;
	if (!m) {
		*out = worst ? *worst : runs[0];
		for (int i = 0; !worst && i < n; i++)
			if (runs[i].status != RS_NOT_RUN) {
				*out = runs[i];
				break;
			}
	} else {
		double v[64];
		for (int k = 0; k < m; k++)
			v[k] = fig_value(&runs[use[k]], FIG_MIB_S);
		qsort(v, (size_t)m, sizeof(v[0]), cmp_double);
		double med = v[(m - 1) / 2];
		int pick = use[0];
		for (int k = 0; k < m; k++)
			if (fig_value(&runs[use[k]], FIG_MIB_S) == med)
				pick = use[k];
		*out = runs[pick];
		for (int f = 0; f < NR_FIG; f++) {
			for (int k = 0; k < m; k++)
				v[k] = fig_value(&runs[use[k]], (enum fig)f);
			qsort(v, (size_t)m, sizeof(v[0]), cmp_double);
			out->fig[f] = (struct fig_stat){ v[(m - 1) / 2], v[0], v[m - 1] };
		}
	}
	out->nr_runs = tried;
	out->runs_ok = m;
	out->interrupted_runs = interrupted;
}

bool within_noise(const struct mode_result *a, const struct mode_result *b)
{
	if (a->runs_ok < 2 || b->runs_ok < 2)
		return false;
	const struct fig_stat *x = &a->fig[FIG_MIB_S], *y = &b->fig[FIG_MIB_S];
	return x->min <= y->max && y->min <= x->max;
}
