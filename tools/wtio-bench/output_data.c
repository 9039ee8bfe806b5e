/* SPDX-License-Identifier: MIT */
/*
 * output_data.c - the machine-readable renderings: JSON (every figure; its
 * keys are documented in docs/BENCHMARKS.md and checked by
 * tests/bench-json-schema.sh), CSV and terse.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "output.h"
#include "reference.h"

#define JSON_SCHEMA_VERSION 2

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
		"\"large_folios\": %s, "
		"\"flushers\": %u, \"dirty_ratio\": %u, \"dirty_background_ratio\": %u, "
		"\"invalidate\": %s, \"pre_read\": %s, "
		"\"stripe_align\": %s, \"size_ahead\": %s, \"repeat\": %u, \"modes\": [",
		j->iodepth, ioengine_name(j->ioengine), j->runtime, j->ramp_time,
		j->time_based ? "true" : "false", j->dsync ? "dsync" : "none",
		j->sfr_every, j->fsync_every, j->overwrite ? "true" : "false",
		j->file_append ? "true" : "false", j->per_job_files ? "true" : "false",
		j->nrfiles, j->rwmixread, (unsigned long long)j->cache_size,
		(unsigned int)j->folio_size, j->large_folios ? "true" : "false",
		j->flushers, j->dirty_ratio, j->dirty_bg_ratio,
		j->invalidate ? "true" : "false",
		j->pre_read ? "true" : "false", j->stripe_align ? "true" : "false",
		j->size_ahead ? "true" : "false", j->repeat);
	for (int i = 0; i < j->nr_modes; i++) {
		fprintf(f, "%s", i ? ", " : "");
		json_str(f, mode_table[j->modes[i]].name);
	}
	fprintf(f, "]}");
}

static const char *const fig_keys[NR_FIG] = {
	"mib_s", "iops", "read_mib_s", "write_mib_s", "lat_p50_us", "lat_p99_us",
	"lat_p99_9_us", "cpu_s_per_gib",
};

static void json_u64_or_null(FILE *f, uint64_t v)
{
	if (v)
		fprintf(f, "%llu", (unsigned long long)v);
	else
		fprintf(f, "null");
}

/* The cell's repeats: spread of each figure, and each run's headline. */
static void json_repeats(FILE *f, struct exp_result *er, int ni, int mi, long nproc)
{
	struct mode_result *r = exp_res(er, ni, mi);
	const struct job_opts *j = &er->exp->job;

	fprintf(f, ",\n         \"read_mib_s\": %.3f, \"write_mib_s\": %.3f, "
		"\"repeats\": %d, \"runs_ok\": %d, \"interrupted_runs\": %d, \"within_noise\": ",
		fig_value(r, FIG_READ_MIB_S), fig_value(r, FIG_WRITE_MIB_S), r->nr_runs,
		r->runs_ok, r->interrupted_runs);
	bool ok;
	res_delta(er, ni, mi, &ok);
	if (ok && j->repeat > 1)
		fprintf(f, "%s", within_noise(exp_res(er, ni, 0), r) ? "true" : "false");
	else
		fprintf(f, "null");
	fprintf(f, ", \"cpu_bound\": %s, \"mem_limit_bytes\": ",
		nproc > 0 && r->numjobs > (unsigned int)nproc ? "true" : "false");
	json_u64_or_null(f, r->mem_limit);
	fprintf(f, ", \"mem_peak_bytes\": ");
	json_u64_or_null(f, r->mem_peak);
	fprintf(f, ",\n         \"stripe\": {\"unit\": %u, \"width\": %u, \"source\": ",
		r->stripe_unit, r->stripe_width);
	json_str(f, r->stripe_source);
	fprintf(f, "},\n         \"spread\": {");
	for (int k = 0; k < NR_FIG; k++) {
		const struct fig_stat *s = &r->fig[k];
		fprintf(f, "%s\"%s\": ", k ? ", " : "", fig_keys[k]);
		if (r->runs_ok)
			fprintf(f, "{\"median\": %.3f, \"min\": %.3f, \"max\": %.3f}",
				s->med, s->min, s->max);
		else
			fprintf(f, "null");
	}
	fprintf(f, "},\n         \"runs\": [");
	for (unsigned int k = 0; k < j->repeat; k++) {
		const struct mode_result *t = exp_run(er, ni, mi, (int)k);
		fprintf(f, "%s{\"repeat\": %u, \"order\": %u, \"status\": \"%s\", "
			"\"mib_s\": %.3f, \"iops\": %.1f, \"lat_p99_us\": %.2f, "
			"\"cpu_s_per_gib\": %.4f, \"mem_peak_bytes\": ",
			k ? ", " : "", t->repeat + 1, t->order, status_name(t->status),
			fig_value(t, FIG_MIB_S), fig_value(t, FIG_IOPS), fig_value(t, FIG_P99),
			fig_value(t, FIG_CPU_GIB));
		json_u64_or_null(f, t->mem_peak);
		fprintf(f, "}");
	}
	fprintf(f, "]");
}

static void json_result(FILE *f, struct exp_result *er, int ni, int mi, long nproc)
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
	json_repeats(f, er, ni, mi, nproc);
	if (r->have_wstats) {
		const struct wtio_stats *w = &r->wst;
		fprintf(f, ",\n         \"wtio\": {\"backend\": ");
		json_str(f, r->wtio_backend);
		fprintf(f, ", \"hits\": %llu, \"misses\": %llu, \"bytes_read\": %llu, "
			"\"bytes_written\": %llu, \"read_ios\": %llu, \"write_ios\": %llu, "
			"\"throttle_waits\": %llu, \"evictions\": %llu, \"rmw_reads\": %llu, "
			"\"writeback_errors\": %llu, \"adaptive_writethrough\": %llu, "
			"\"failed_dropped_folios\": %llu}",
			(unsigned long long)w->hits, (unsigned long long)w->misses,
			(unsigned long long)w->bytes_read, (unsigned long long)w->bytes_written,
			(unsigned long long)w->read_ios, (unsigned long long)w->write_ios,
			(unsigned long long)w->throttle_waits, (unsigned long long)w->evictions,
			(unsigned long long)w->rmw_reads, (unsigned long long)w->writeback_errors,
			(unsigned long long)w->adaptive_writethrough,
			(unsigned long long)w->failed_dropped_folios);
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
	fprintf(f, ", \"commit\": ");
	json_str(f, m->commit);
	fprintf(f, "},\n  \"memory\": {\"policy\": ");
	json_str(f, m->mem_policy);
	fprintf(f, ", \"cgroup\": ");
	json_str_or_null(f, m->memcg);
	fprintf(f, ", \"allowance_bytes\": %llu, \"equal_memory\": %s, \"note\": ",
		(unsigned long long)MEM_ALLOWANCE, m->memcg ? "true" : "false");
	json_str(f, m->mem_note);
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
		fprintf(f, ", \"caches_dropped\": %s, \"wtio_cache_bytes\": %llu,\n     \"job\": ",
			e->caches_dropped ? "true" : "false", (unsigned long long)e->cache_size);
		json_job(f, j);
		fprintf(f, ",\n     \"results\": [\n");
		bool first = true;
		for (int ni = 0; ni < j->nr_numjobs; ni++)
			for (int mi = 0; mi < j->nr_modes; mi++) {
				fprintf(f, "%s", first ? "" : ",\n");
				first = false;
				json_result(f, e, ni, mi, m->nproc);
			}
		fprintf(f, "\n     ],\n     \"reference\": ");
		reference_json(f, e);
		fprintf(f, "}");
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
