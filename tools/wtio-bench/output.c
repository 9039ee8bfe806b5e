/* SPDX-License-Identifier: MIT */
/*
 * output.c - renderings of the results. The normal table mirrors the
 * reference cover letter's tables (MiB/s and Δ% against the first mode),
 * preceded by one detail table per numjobs. JSON carries every figure;
 * its keys are documented in docs/BENCHMARKS.md and checked by
 * tests/bench-json-schema.sh.
 */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "output.h"

#define JSON_SCHEMA_VERSION 1

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

static bool has_figures(const struct mode_result *r)
{
	return (r->status == RS_OK || r->status == RS_INTERRUPTED) && r->c.ops > 0;
}

double res_delta(struct exp_result *er, int ni, int mi, bool *ok)
{
	struct mode_result *b = exp_res(er, ni, 0), *r = exp_res(er, ni, mi);

	*ok = false;
	if (mi == 0 || !has_figures(b) || !has_figures(r) || res_mib_s(b) <= 0)
		return 0;
	*ok = true;
	return (res_mib_s(r) / res_mib_s(b) - 1.0) * 100.0;
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
	fprintf(f, "\n  on %s (%s)%s\n", er->directory, er->fstype,
		er->caches_dropped ? ", page cache dropped before each mode" : "");
}

static void fmt_us(char *buf, size_t len, uint64_t ns)
{
	double us = (double)ns / 1000.0;
	if (us >= 100000)
		snprintf(buf, len, "%.0fk", us / 1000);
	else if (us >= 100)
		snprintf(buf, len, "%.0f", us);
	else
		snprintf(buf, len, "%.1f", us);
}

void output_normal_one(FILE *f, struct exp_result *er)
{
	const struct experiment *ex = er->exp;
	const struct job_opts *j = &ex->job;

	fprintf(f, "\n== %s: %s ==\n  ", ex->name, ex->title);
	job_line(f, er);
	for (int ni = 0; ni < j->nr_numjobs; ni++) {
		fprintf(f, "\nnumjobs=%u\n", j->numjobs[ni]);
		fprintf(f, "  %-28s %-10s %9s %9s %8s %8s %8s %9s %8s\n", "mode", "engine",
			"MiB/s", "IOPS", "p50(us)", "p99(us)", "p99.9", "CPUs/GiB", "delta");
		for (int mi = 0; mi < j->nr_modes; mi++) {
			struct mode_result *r = exp_res(er, ni, mi);
			const char *name = mode_table[j->modes[mi]].name;
			if (!has_figures(r)) {
				fprintf(f, "  %-28s %-10s %s%s%s\n", name,
					r->engine ? r->engine : "-", status_name(r->status),
					r->reason[0] ? ": " : "", r->reason);
				continue;
			}
			char p50[16], p99[16], p999[16], d[16] = "-";
			bool ok;
			double delta = res_delta(er, ni, mi, &ok);
			fmt_us(p50, sizeof(p50), hist_percentile(&r->hist, 50));
			fmt_us(p99, sizeof(p99), hist_percentile(&r->hist, 99));
			fmt_us(p999, sizeof(p999), hist_percentile(&r->hist, 99.9));
			if (ok)
				snprintf(d, sizeof(d), "%+.1f%%", delta);
			fprintf(f, "  %-28s %-10s %9.1f %9.0f %8s %8s %8s %9.2f %8s%s\n",
				name, r->engine, res_mib_s(r), res_iops(r), p50, p99, p999,
				res_cpu_per_gib(r), d,
				r->status == RS_INTERRUPTED ? "  (interrupted)" :
				r->c.errors ? "  (short I/O!)" : "");
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
	if (j->nr_numjobs < 2 && j->nr_modes < 2)
		return;
	/* The reference's layout: numjobs rows, one column per mode. */
	int w[MAX_MODES + 1];
	w[0] = 9;
	for (int mi = 0; mi < j->nr_modes; mi++) {
		int l = (int)strlen(mode_table[j->modes[mi]].name) + 2;
		w[mi + 1] = l < 24 ? 24 : l;
	}
	fprintf(f, "\nSummary: MiB/s (delta against %s)\n", mode_table[j->modes[0]].name);
	for (int row = 0; row < 3 + j->nr_numjobs + 1; row++) {
		bool sep = row == 0 || row == 2 || row == 3 + j->nr_numjobs;
		if (sep) {
			for (int c = 0; c <= j->nr_modes; c++) {
				fputc('+', f);
				for (int k = 0; k < w[c]; k++)
					fputc('-', f);
			}
			fputs("+\n", f);
			continue;
		}
		char cell[64];
		for (int c = 0; c <= j->nr_modes; c++) {
			if (row == 1)
				snprintf(cell, sizeof(cell), "%s",
					 c ? mode_table[j->modes[c - 1]].name : "numjobs");
			else {
				int ni = row - 3;
				if (!c)
					snprintf(cell, sizeof(cell), "%u", j->numjobs[ni]);
				else {
					struct mode_result *r = exp_res(er, ni, c - 1);
					bool ok;
					double d = res_delta(er, ni, c - 1, &ok);
					if (!has_figures(r))
						snprintf(cell, sizeof(cell), "%s", status_name(r->status));
					else if (ok)
						snprintf(cell, sizeof(cell), "%.0f MiB/s (%+.1f%%)",
							 res_mib_s(r), d);
					else
						snprintf(cell, sizeof(cell), "%.0f MiB/s", res_mib_s(r));
				}
			}
			fprintf(f, "| %-*s", w[c] - 1, cell);
		}
		fputs("|\n", f);
	}
}

void output_normal(FILE *f, struct exp_result *er, int n, const struct run_meta *m)
{
	for (int i = 0; i < n; i++)
		output_normal_one(f, &er[i]);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* A string, or null where there is none. */
static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		json_str(f, s);
	else
		fprintf(f, "null");
}

static void json_job(FILE *f, const struct job_opts *j)
{
	fprintf(f, "{\"rw\": \"%s\", \"bs\": %llu, \"size\": %llu, \"io_size\": %llu, "
		"\"numjobs\": [", rw_name(j->rw), (unsigned long long)j->bs,
		(unsigned long long)j->size, (unsigned long long)(j->io_size ? j->io_size : j->size));
	for (int i = 0; i < j->nr_numjobs; i++)
		fprintf(f, "%s%u", i ? ", " : "", j->numjobs[i]);
	fprintf(f, "], \"iodepth\": %u, \"ioengine\": \"%s\", \"runtime\": %g, "
		"\"ramp_time\": %g, \"time_based\": %s, \"sync\": \"%s\", "
		"\"sync_file_range\": %u, \"fsync\": %u, \"overwrite\": %s, "
		"\"file_append\": %s, \"per_job_files\": %s, \"nrfiles\": %u, "
		"\"rwmixread\": %u, \"cache_size\": %llu, \"folio_size\": %u, "
		"\"flushers\": %u, \"invalidate\": %s, \"pre_read\": %s, "
		"\"stripe_align\": %s, \"size_ahead\": %s, \"modes\": [",
		j->iodepth, ioengine_name(j->ioengine), j->runtime, j->ramp_time,
		j->time_based ? "true" : "false", j->dsync ? "dsync" : "none",
		j->sfr_every, j->fsync_every, j->overwrite ? "true" : "false",
		j->file_append ? "true" : "false", j->per_job_files ? "true" : "false",
		j->nrfiles, j->rwmixread, (unsigned long long)j->cache_size,
		(unsigned int)j->folio_size, j->flushers, j->invalidate ? "true" : "false",
		j->pre_read ? "true" : "false", j->stripe_align ? "true" : "false",
		j->size_ahead ? "true" : "false");
	for (int i = 0; i < j->nr_modes; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, mode_table[j->modes[i]].name);
	}
	fprintf(f, "]}");
}

static void json_result(FILE *f, struct exp_result *er, int ni, int mi)
{
	struct mode_result *r = exp_res(er, ni, mi);
	bool ok;
	double d = res_delta(er, ni, mi, &ok);

	fprintf(f, "        {\"mode\": ");
	json_str(f, mode_table[r->mode].name);
	fprintf(f, ", \"numjobs\": %u, \"status\": \"%s\", \"reason\": ", r->numjobs,
		status_name(r->status));
	json_str(f, r->reason);
	fprintf(f, ", \"engine\": ");
	json_str_or_null(f, r->engine);
	fprintf(f, ",\n         \"runtime_s\": %.6f, \"bytes\": %llu, \"ops\": %llu, "
		"\"issued_bytes\": %llu, \"issued_ops\": %llu, \"read_bytes\": %llu, "
		"\"read_ops\": %llu, \"write_bytes\": %llu, \"write_ops\": %llu, "
		"\"errors\": %llu, \"syncs\": %llu,\n",
		r->elapsed_s, (unsigned long long)r->c.bytes, (unsigned long long)r->c.ops,
		(unsigned long long)r->c.issued_bytes, (unsigned long long)r->c.issued_ops,
		(unsigned long long)r->c.read_bytes, (unsigned long long)r->c.read_ops,
		(unsigned long long)r->c.write_bytes, (unsigned long long)r->c.write_ops,
		(unsigned long long)r->c.errors, (unsigned long long)r->c.syncs);
	fprintf(f, "         \"mib_s\": %.3f, \"iops\": %.1f, \"delta_pct\": ",
		res_mib_s(r), res_iops(r));
	if (ok)
		fprintf(f, "%.2f", d);
	else
		fprintf(f, "null");
	fprintf(f, ", \"cpu_s\": %.4f, \"cpu_s_per_gib\": %.4f, \"close_s\": %.4f, "
		"\"file_bytes\": %llu,\n", r->cpu_s, res_cpu_per_gib(r), r->flush_s,
		(unsigned long long)r->file_bytes);
	fprintf(f, "         \"lat_us\": {\"count\": %llu, \"mean\": %.2f, \"min\": %.2f, "
		"\"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f, \"p99_9\": %.2f, \"max\": %.2f},\n",
		(unsigned long long)r->hist.count, hist_mean(&r->hist) / 1000.0,
		r->hist.count ? (double)r->hist.min_ns / 1000.0 : 0.0,
		(double)hist_percentile(&r->hist, 50) / 1000.0,
		(double)hist_percentile(&r->hist, 90) / 1000.0,
		(double)hist_percentile(&r->hist, 99) / 1000.0,
		(double)hist_percentile(&r->hist, 99.9) / 1000.0,
		(double)r->hist.max_ns / 1000.0);
	fprintf(f, "         \"samples_mib_s\": [");
	for (int s = 0; s < r->nr_samples; s++)
		fprintf(f, "%s%.2f", s ? ", " : "", r->samples[s]);
	fprintf(f, "]");
	if (r->have_wstats) {
		const struct wtio_stats *w = &r->wst;
		fprintf(f, ",\n         \"wtio\": {\"backend\": ");
		json_str(f, r->wtio_backend);
		fprintf(f, ", \"hits\": %llu, \"misses\": %llu, \"bytes_read\": %llu, "
			"\"bytes_written\": %llu, \"read_ios\": %llu, \"write_ios\": %llu, "
			"\"throttle_waits\": %llu, \"evictions\": %llu, \"rmw_reads\": %llu, "
			"\"writeback_errors\": %llu}",
			(unsigned long long)w->hits, (unsigned long long)w->misses,
			(unsigned long long)w->bytes_read, (unsigned long long)w->bytes_written,
			(unsigned long long)w->read_ios, (unsigned long long)w->write_ios,
			(unsigned long long)w->throttle_waits, (unsigned long long)w->evictions,
			(unsigned long long)w->rmw_reads, (unsigned long long)w->writeback_errors);
	}
	fprintf(f, "}");
}

void output_json(FILE *f, struct exp_result *er, int n, const struct run_meta *m)
{
	fprintf(f, "{\n  \"tool\": \"wtio-bench\", \"schema\": %d,\n  \"date\": ",
		JSON_SCHEMA_VERSION);
	json_str(f, m->date);
	fprintf(f, ",\n  \"cmdline\": ");
	json_str(f, m->cmdline);
	fprintf(f, ",\n  \"suite\": ");
	json_str_or_null(f, m->suite);
	fprintf(f, ",\n  \"interrupted\": %s,\n  \"machine\": {\"nproc\": %ld, "
		"\"mem_gib\": %.1f, \"kernel\": ", m->interrupted ? "true" : "false",
		m->nproc, m->mem_gib);
	json_str(f, m->kernel);
	fprintf(f, ", \"root\": %s, \"libwtio\": \"%d.%d\", \"xfs_loop\": %s, \"stripe\": ",
		m->root ? "true" : "false", wtio_version_major(), wtio_version_minor(),
		m->xfs_loop ? "true" : "false");
	json_str(f, m->stripe);
	fprintf(f, "},\n  \"experiments\": [");
	for (int i = 0; i < n; i++) {
		struct exp_result *e = &er[i];
		const struct job_opts *j = &e->exp->job;
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_str(f, e->exp->name);
		fprintf(f, ", \"title\": ");
		json_str(f, e->exp->title);
		fprintf(f, ",\n     \"directory\": ");
		json_str(f, e->directory);
		fprintf(f, ", \"filesystem\": ");
		json_str(f, e->fstype);
		fprintf(f, ", \"caches_dropped\": %s,\n     \"job\": ",
			e->caches_dropped ? "true" : "false");
		json_job(f, j);
		fprintf(f, ",\n     \"results\": [\n");
		bool first = true;
		for (int ni = 0; ni < j->nr_numjobs; ni++)
			for (int mi = 0; mi < j->nr_modes; mi++) {
				fprintf(f, "%s", first ? "" : ",\n");
				first = false;
				json_result(f, e, ni, mi);
			}
		fprintf(f, "\n     ]}");
	}
	fprintf(f, "\n  ]\n}\n");
}

static const char csv_header[] =
	"experiment,numjobs,mode,status,engine,mib_s,iops,lat_p50_us,lat_p99_us,"
	"lat_p99_9_us,lat_mean_us,cpu_s_per_gib,delta_pct,bytes,ops,issued_bytes,"
	"issued_ops,errors,runtime_s,cpu_s,file_bytes,reason";

static void row(FILE *f, struct exp_result *e, int ni, int mi, char sep, bool quote)
{
	struct mode_result *r = exp_res(e, ni, mi);
	bool ok;
	double d = res_delta(e, ni, mi, &ok);
	char ds[32] = "";

	if (ok)
		snprintf(ds, sizeof(ds), "%.2f", d);
	fprintf(f, "%s%c%u%c%s%c%s%c%s%c%.3f%c%.1f%c%.2f%c%.2f%c%.2f%c%.2f%c%.4f%c%s%c"
		"%llu%c%llu%c%llu%c%llu%c%llu%c%.6f%c%.4f%c%llu%c",
		e->exp->name, sep, r->numjobs, sep, mode_table[r->mode].name, sep,
		status_name(r->status), sep, r->engine ? r->engine : "", sep,
		res_mib_s(r), sep, res_iops(r), sep,
		hist_percentile(&r->hist, 50) / 1000.0, sep,
		hist_percentile(&r->hist, 99) / 1000.0, sep,
		hist_percentile(&r->hist, 99.9) / 1000.0, sep,
		hist_mean(&r->hist) / 1000.0, sep, res_cpu_per_gib(r), sep, ds, sep,
		(unsigned long long)r->c.bytes, sep, (unsigned long long)r->c.ops, sep,
		(unsigned long long)r->c.issued_bytes, sep,
		(unsigned long long)r->c.issued_ops, sep,
		(unsigned long long)r->c.errors, sep, r->elapsed_s, sep, r->cpu_s, sep,
		(unsigned long long)r->file_bytes, sep);
	if (quote) {
		fputc('"', f);
		for (const char *s = r->reason; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		for (const char *s = r->reason; *s; s++)
			fputc(*s == sep ? ',' : *s, f);
	}
	fputc('\n', f);
}

void output_csv(FILE *f, struct exp_result *er, int n, const struct run_meta *m)
{
	fprintf(f, "%s\n", csv_header);
	for (int i = 0; i < n; i++)
		for (int ni = 0; ni < er[i].exp->job.nr_numjobs; ni++)
			for (int mi = 0; mi < er[i].exp->job.nr_modes; mi++)
				row(f, &er[i], ni, mi, ',', true);
}

void output_terse(FILE *f, struct exp_result *er, int n, const struct run_meta *m)
{
	/* One line per result, ';' separated, fields as the CSV header. */
	for (int i = 0; i < n; i++)
		for (int ni = 0; ni < er[i].exp->job.nr_numjobs; ni++)
			for (int mi = 0; mi < er[i].exp->job.nr_modes; mi++) {
				fprintf(f, "wtio-bench;1;");
				row(f, &er[i], ni, mi, ';', false);
			}
}
