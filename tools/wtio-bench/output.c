/* SPDX-License-Identifier: MIT */
/*
 * output.c - the human rendering of the results: per experiment its job,
 * what memory each side had, one detail table per numjobs (medians and
 * ranges of the repeats), a Summary in the reference cover letter's layout
 * (MiB/s and delta against the first mode) and the reference's own figures
 * beside ours (reference.c). The run's description (meta_fill) lives here
 * too.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "output.h"
#include "reference.h"

void meta_fill(struct run_meta *m, int argc, char **argv, const char *suite)
{
	time_t t = time(NULL);
	struct tm tm;
	struct utsname u;

	memset(m, 0, sizeof(*m));
	localtime_r(&t, &tm);
	strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%S%z", &tm);
	if (!uname(&u))
		snprintf(m->kernel, sizeof(m->kernel), "%s", u.release);
	m->nproc = sysconf(_SC_NPROCESSORS_ONLN);
	m->mem_gib = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) /
		     (1024.0 * 1024 * 1024);
	size_t o = 0;
	for (int i = 0; i < argc && o < sizeof(m->cmdline) - 2; i++)
		o += (size_t)snprintf(m->cmdline + o, sizeof(m->cmdline) - o, "%s%s",
				      i ? " " : "", argv[i]);
	m->suite = suite;
	m->root = geteuid() == 0;
}

double res_delta(struct exp_result *er, int ni, int mi, bool *ok)
{
	struct mode_result *b = exp_res(er, ni, 0), *r = exp_res(er, ni, mi);

	*ok = false;
	if (mi == 0 || !has_figures(b) || !has_figures(r) || b->fig[FIG_MIB_S].med <= 0)
		return 0;
	*ok = true;
	return (r->fig[FIG_MIB_S].med / b->fig[FIG_MIB_S].med - 1.0) * 100.0;
}

static void job_line(FILE *f, const struct exp_result *er)
{
	const struct job_opts *j = &er->exp->job;
	char b1[32], b2[32];

	fprintf(f, "rw=%s bs=%s size=%s iodepth=%u", rw_name(j->rw),
		size_str(j->bs, b1, sizeof(b1)), size_str(j->size, b2, sizeof(b2)),
		j->iodepth);
	if (j->dsync)
		fprintf(f, " sync=dsync");
	if (j->sfr_every)
		fprintf(f, " sync_file_range=wait_before,write:%u", j->sfr_every);
	if (j->fsync_every)
		fprintf(f, " fsync=%u", j->fsync_every);
	if (j->overwrite)
		fprintf(f, " overwrite");
	if (j->file_append)
		fprintf(f, " file_append");
	fprintf(f, " files=%s", j->per_job_files ? "per-job" : "shared");
	if (j->nrfiles > 1)
		fprintf(f, " nrfiles=%u", j->nrfiles);
	if (j->runtime > 0)
		fprintf(f, " runtime=%gs%s", j->runtime, j->time_based ? " time_based" : "");
	if (j->ramp_time > 0)
		fprintf(f, " ramp_time=%gs", j->ramp_time);
	if (j->pre_read)
		fprintf(f, " pre_read");
	if (!j->stripe_align)
		fprintf(f, " stripe-align=0");
	if (j->size_ahead)
		fprintf(f, " size-ahead=1");
	if (!j->invalidate)
		fprintf(f, " invalidate=0");
	if (j->cache_size)
		fprintf(f, " cache-size=%s", size_str(j->cache_size, b1, sizeof(b1)));
	if (j->repeat > 1)
		fprintf(f, " repeat=%u", j->repeat);
	fprintf(f, "\n  on %s (%s)%s\n", er->directory, er->fstype,
		er->caches_dropped ? ", page cache dropped before each mode" : "");
}

static const char *mib_str(uint64_t v, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f MiB", (double)v / 1048576.0);
	return buf;
}

/* What memory each side had, and the stripe geometry wtio's files saw. */
static void setup_lines(FILE *f, const struct exp_result *er, const struct run_meta *m)
{
	const struct job_opts *j = &er->exp->job;
	char b1[32], b2[32];
	uint64_t lo = 0, hi = 0;
	const struct mode_result *geo = NULL;

	for (int k = 0; k < j->nr_numjobs * j->nr_modes; k++) {
		const struct mode_result *r = &er->res[k];
		if (r->mem_limit && (!lo || r->mem_limit < lo))
			lo = r->mem_limit;
		if (r->mem_limit > hi)
			hi = r->mem_limit;
		if (!geo && r->stripe_source[0])
			geo = r;
	}
	fprintf(f, "  memory: wtio's cache %s; ", size_str(er->cache_size, b1, sizeof(b1)));
	mib_str(lo, b1, sizeof(b1));
	mib_str(hi, b2, sizeof(b2));
	bool one = !strcmp(b1, b2);
	if (m->memcg && hi)
		fprintf(f, "kernel modes in a memory cgroup (%s) limited to %s%s%s (%s)\n",
			m->memcg, b1, one ? "" : " to ", one ? "" : b2,
			!strcmp(m->mem_policy, "auto") ?
			"wtio's cache + 64M + numjobs x iodepth x bs of I/O buffers" : "--mem-limit");
	else
		fprintf(f, "kernel modes unlimited: NOT an equal-memory comparison (%s)\n",
			m->mem_note[0] ? m->mem_note : "no kernel mode ran in a cgroup");
	if (m->stripe[0])	/* --raid and --md-raid say their own geometry */
		fprintf(f, m->xfs_loop ? "  filesystem made with stripe %s\n" : "  target: %s\n",
			m->stripe);
	if (geo && geo->stripe_unit)
		fprintf(f, "  stripe geometry in use by wtio: su=%s sw=%u (from %s)%s\n",
			size_str(geo->stripe_unit, b1, sizeof(b1)),
			geo->stripe_width / geo->stripe_unit, geo->stripe_source,
			j->stripe_align ? "" : ", I/O not cut at it (--stripe-align=0)");
	else if (geo)
		fprintf(f, "  stripe geometry in use by wtio: none (source: %s)\n",
			geo->stripe_source);
	if (j->repeat > 1)
		fprintf(f, "  %u runs of each mode, alternating; figures are medians, "
			"[min-max] over the runs\n", j->repeat);
}

static void fmt_us(char *buf, size_t len, double us)
{
	if (us >= 100000)
		snprintf(buf, len, "%.0fk", us / 1000);
	else if (us >= 100)
		snprintf(buf, len, "%.0f", us);
	else
		snprintf(buf, len, "%.1f", us);
}

static bool cpu_bound(unsigned int nj, const struct run_meta *m)
{
	return m->nproc > 0 && nj > (unsigned int)m->nproc;
}

static void detail_table(FILE *f, struct exp_result *er, int ni, const struct run_meta *m)
{
	const struct job_opts *j = &er->exp->job;
	bool rep = j->repeat > 1;

	fprintf(f, "\nnumjobs=%u", j->numjobs[ni]);
	if (cpu_bound(j->numjobs[ni], m))
		fprintf(f, "  (CPU-bound: %u jobs on %ld CPUs)", j->numjobs[ni], m->nproc);
	fprintf(f, "\n  %-28s %-10s %9s %s%9s %8s %8s %8s %9s %8s\n", "mode", "engine",
		"MiB/s", rep ? "[    min-max    ] " : "", "IOPS", "p50(us)", "p99(us)", "p99.9",
		"CPUs/GiB", "delta");
	for (int mi = 0; mi < j->nr_modes; mi++) {
		struct mode_result *r = exp_res(er, ni, mi);
		const char *name = mode_table[j->modes[mi]].name;
		if (!has_figures(r)) {
			fprintf(f, "  %-28s %-10s %s%s%s\n", name,
				r->engine ? r->engine : "-", status_name(r->status),
				r->reason[0] ? ": " : "", r->reason);
			continue;
		}
		char p50[16], p99[16], p999[16], d[16] = "-", range[40] = "";
		bool ok;
		double delta = res_delta(er, ni, mi, &ok);
		fmt_us(p50, sizeof(p50), r->fig[FIG_P50].med);
		fmt_us(p99, sizeof(p99), r->fig[FIG_P99].med);
		fmt_us(p999, sizeof(p999), r->fig[FIG_P999].med);
		if (ok)
			snprintf(d, sizeof(d), "%+.1f%%", delta);
		if (rep)
			snprintf(range, sizeof(range), "[%7.1f-%-7.1f] ", r->fig[FIG_MIB_S].min,
				 r->fig[FIG_MIB_S].max);
		fprintf(f, "  %-28s %-10s %9.1f %s%9.0f %8s %8s %8s %9.2f %8s%s%s\n",
			name, r->engine, r->fig[FIG_MIB_S].med, range, r->fig[FIG_IOPS].med,
			p50, p99, p999, r->fig[FIG_CPU_GIB].med, d,
			ok && within_noise(exp_res(er, ni, 0), r) ? " within noise" : "",
			r->status == RS_INTERRUPTED || r->interrupted_runs ? "  (interrupted)" :
			r->c.errors ? "  (short I/O!)" : "");
	}
	for (int mi = 0; j->rw == RW_RANDRW && mi < j->nr_modes; mi++) {
		struct mode_result *r = exp_res(er, ni, mi);
		if (has_figures(r))
			fprintf(f, "  %-28s reads %.1f MiB/s, writes %.1f MiB/s\n",
				mode_table[j->modes[mi]].name, r->fig[FIG_READ_MIB_S].med,
				r->fig[FIG_WRITE_MIB_S].med);
	}
	for (int mi = 0; mi < j->nr_modes; mi++) {
		struct mode_result *r = exp_res(er, ni, mi);
		if (!r->nr_samples)
			continue;
		fprintf(f, "  %s per-second MiB/s:", mode_table[j->modes[mi]].name);
		for (int s = 0; s < r->nr_samples; s++)
			fprintf(f, " %.0f", r->samples[s]);
		fprintf(f, "\n");
	}
}

/* One cell of the Summary. */
static void summary_cell(char *cell, size_t len, struct exp_result *er, int ni, int mi)
{
	struct mode_result *r = exp_res(er, ni, mi);
	bool ok;
	double d = res_delta(er, ni, mi, &ok);
	int o;

	if (!has_figures(r)) {
		snprintf(cell, len, "%s", status_name(r->status));
		return;
	}
	o = snprintf(cell, len, "%.0f MiB/s", r->fig[FIG_MIB_S].med);
	if (ok)
		o += snprintf(cell + o, len - (size_t)o, " (%+.1f%%%s)", d,
			      within_noise(exp_res(er, ni, 0), r) ? ", within noise" : "");
	if (r->status == RS_INTERRUPTED || r->interrupted_runs)
		snprintf(cell + o, len - (size_t)o, " interrupted");
}

/* The reference's layout: numjobs rows, one column per mode. */
static void summary(FILE *f, struct exp_result *er, const struct run_meta *m)
{
	const struct job_opts *j = &er->exp->job;
	char cells[MAX_NUMJOBS + 1][MAX_MODES + 1][80];
	int w[MAX_MODES + 1];
	int rows = j->nr_numjobs + 1;

	for (int c = 0; c <= j->nr_modes; c++)
		snprintf(cells[0][c], sizeof(cells[0][c]), "%s",
			 c ? mode_table[j->modes[c - 1]].name : "numjobs");
	for (int ni = 0; ni < j->nr_numjobs; ni++) {
		snprintf(cells[ni + 1][0], sizeof(cells[0][0]), "%u%s", j->numjobs[ni],
			 cpu_bound(j->numjobs[ni], m) ? " CPU-bound" : "");
		for (int mi = 0; mi < j->nr_modes; mi++)
			summary_cell(cells[ni + 1][mi + 1], sizeof(cells[0][0]), er, ni, mi);
	}
	for (int c = 0; c <= j->nr_modes; c++) {
		w[c] = c ? 24 : 9;
		for (int r = 0; r < rows; r++)
			if ((int)strlen(cells[r][c]) + 2 > w[c])
				w[c] = (int)strlen(cells[r][c]) + 2;
	}
	fprintf(f, "\nSummary: MiB/s (delta against %s)%s\n", mode_table[j->modes[0]].name,
		j->repeat > 1 ? "; medians of the runs, within noise: the min-max ranges overlap" : "");
	for (int r = 0; r <= rows; r++) {
		if (r <= 1 || r == rows) {
			for (int c = 0; c <= j->nr_modes; c++) {
				fputc('+', f);
				for (int k = 0; k < w[c]; k++)
					fputc('-', f);
			}
			fputs("+\n", f);
		}
		if (r == rows)
			break;
		for (int c = 0; c <= j->nr_modes; c++)
			fprintf(f, "| %-*s", w[c] - 1, cells[r][c]);
		fputs("|\n", f);
	}
}

void output_normal_one(FILE *f, struct exp_result *er, const struct run_meta *m)
{
	const struct experiment *ex = er->exp;
	const struct job_opts *j = &ex->job;

	fprintf(f, "\n== %s: %s ==\n  ", ex->name, ex->title);
	job_line(f, er);
	setup_lines(f, er, m);
	for (int ni = 0; ni < j->nr_numjobs; ni++)
		detail_table(f, er, ni, m);
	if (j->nr_numjobs >= 2 || j->nr_modes >= 2)
		summary(f, er, m);
	reference_print(f, er);
}

void output_normal(FILE *f, struct exp_result *er, int n, const struct run_meta *m)
{
	for (int i = 0; i < n; i++)
		output_normal_one(f, &er[i], m);
}

