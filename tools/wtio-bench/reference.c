/* SPDX-License-Identifier: MIT */
/*
 * reference.c - the reference's own figures, quoted as published, and the
 * comparison with ours: for each numjobs both have, the reference's ratio
 * (its mode over its baseline) beside ours, and a verdict: does this run
 * go the same way, and by how much. The figures come from the threads in
 * the project's reference folder (file and table named with each).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "figures.h"
#include "modes.h"
#include "reference.h"

struct ref_row {
	unsigned int numjobs;	/* 0: the reference's own thread counts differ */
	double base, theirs;
};

struct ref_table {
	const char *exp;		/* our experiment of that name */
	const char *source;
	const char *setup;		/* the reference's machine */
	const char *unit;
	const char *base_label, *their_label;
	const char *base_mode, *our_mode;	/* our counterparts */
	const struct ref_row *rows;
	int nr_rows;
};

#define COVER "rwf-writethrough-v4-cover-letter.txt"
#define COVER_SETUP "IBM Power 11 LPAR, 62 GiB, Samsung PM173 NVMe, XFS 4k, Linux 7.2-rc1"
#define ROWS(...) (const struct ref_row[]){ __VA_ARGS__ }, \
	(int)(sizeof((const struct ref_row[]){ __VA_ARGS__ }) / sizeof(struct ref_row))

static const struct ref_table refs[] = {
	{ "table1", COVER ", Table 1: Extending writes (libaio + O_DSYNC), all writers on single file",
	  COVER_SETUP, "MiB/s", "Buffered IO", "Writethrough IO", "kernel-buffered",
	  "wtio-writethrough-noserial",
	  ROWS({ 1, 133, 133 }, { 2, 179, 243 }, { 4, 253, 358 }, { 8, 366, 376 }, { 16, 474, 449 }) },
	{ "table2", COVER ", Table 2: Random pure overwrites (libaio + O_DSYNC), all writers on single file",
	  COVER_SETUP, "MiB/s", "Buffered IO", "Writethrough IO", "kernel-buffered",
	  "wtio-writethrough-noserial",
	  ROWS({ 1, 131, 391 }, { 2, 377, 791 }, { 4, 695, 1591 }, { 8, 1217, 1846 }, { 16, 1197, 1844 }) },
	{ "table3", COVER ", Table 3: Random pure overwrites (libaio + O_DSYNC), each writer its own file",
	  COVER_SETUP, "MiB/s", "Buffered IO", "Writethrough IO", "kernel-buffered",
	  "wtio-writethrough-noserial",
	  ROWS({ 1, 187, 389 }, { 2, 373, 781 }, { 4, 706, 1568 }, { 8, 1222, 1796 }) },
	{ "table4", COVER ", Table 4: Random 16KB overwrites with sync_file_range:16, single file",
	  COVER_SETUP, "MiB/s", "Buffered IO", "Writethrough IO", "kernel-buffered",
	  "wtio-writethrough-noserial",
	  ROWS({ 1, 1323, 1275 }, { 2, 1779, 2434 }, { 4, 2092, 2519 }, { 8, 2272, 2517 }, { 16, 2328, 2525 }) },
	{ "sustained", "lsfmm-2026-buffered-atomic-writes-writethrough-thread.txt (Dave Chinner): "
	  "multi-file random 4kB writes, files larger than memory, long runs",
	  "his machine, SSD good for 1.6M IOPS with DIO", "IOPS", "buffered (dirty throttled)",
	  "writethrough", "kernel-buffered", "wtio-writethrough",
	  ROWS({ 0, 100000, 900000 }) },
	{ "smallfiles", "lsfmm-2026-buffered-atomic-writes-writethrough-thread.txt (Dave Chinner): "
	  "fsmark, 4kB file creates, a directory per thread (buffered at 4 threads, "
	  "write-through at 32)",
	  "his machine", "creates/s", "vanilla writeback", "writethrough", "kernel-buffered",
	  "wtio-writethrough",
	  ROWS({ 0, 80000, 400000 }) },
	{ "dontcache-stream", "rwf-dontcache-iomap-xfs-patches.txt, PATCH 2/2 (Jens Axboe): "
	  "buffered writes to 32 files, bs 64k, settled per-second rate",
	  "his machine", "MB/s", "uncached 0", "uncached 1", "kernel-buffered", "kernel-dontcache",
	  ROWS({ 0, 115000, 191000 }) },
};

static const struct ref_table *ref_find(const char *exp)
{
	for (size_t i = 0; i < sizeof(refs) / sizeof(refs[0]); i++)
		if (!strcmp(refs[i].exp, exp))
			return &refs[i];
	return NULL;
}

static int mode_index(const struct job_opts *j, const char *name)
{
	for (int i = 0; i < j->nr_modes; i++)
		if (!strcmp(mode_table[j->modes[i]].name, name))
			return i;
	return -1;
}

/* Our cell for a reference row: the same numjobs, or our largest. */
static int numjobs_index(const struct job_opts *j, unsigned int nj)
{
	int best = -1;
	for (int i = 0; i < j->nr_numjobs; i++)
		if (nj ? j->numjobs[i] == nj : (best < 0 || j->numjobs[i] > j->numjobs[best]))
			best = i;
	return best;
}

enum verdict { V_NONE, V_SAME, V_OPPOSITE, V_NOISE };

struct ref_cmp {
	int ni;
	double ours_base, ours_theirs, ours_ratio, ref_ratio;
	enum verdict v;
};

static enum verdict compare(struct exp_result *er, const struct ref_table *t, int row,
			    struct ref_cmp *c)
{
	const struct job_opts *j = &er->exp->job;
	int bi = mode_index(j, t->base_mode), oi = mode_index(j, t->our_mode);

	memset(c, 0, sizeof(*c));
	c->ref_ratio = t->rows[row].theirs / t->rows[row].base;
	c->ni = numjobs_index(j, t->rows[row].numjobs);
	if (bi < 0 || oi < 0 || c->ni < 0)
		return c->v = V_NONE;
	struct mode_result *b = exp_res(er, c->ni, bi), *o = exp_res(er, c->ni, oi);
	if (!has_figures(b) || !has_figures(o) || b->fig[FIG_MIB_S].med <= 0)
		return c->v = V_NONE;
	/* MiB/s ratios: the same as IOPS or creates/s ratios at one bs. */
	c->ours_base = b->fig[FIG_MIB_S].med;
	c->ours_theirs = o->fig[FIG_MIB_S].med;
	c->ours_ratio = c->ours_theirs / c->ours_base;
	if (within_noise(b, o))
		return c->v = V_NOISE;
	bool ref_up = c->ref_ratio >= 1.0, ours_up = c->ours_ratio >= 1.0;
	return c->v = ref_up == ours_up ? V_SAME : V_OPPOSITE;
}

static void verdict_line(FILE *f, struct exp_result *er, const struct ref_table *t)
{
	static const char *const what[] = { "", "same direction", "opposite direction",
					    "within noise" };
	struct ref_cmp c;
	bool any = false;

	fprintf(f, "Verdict %s: ", er->exp->name);
	for (enum verdict v = V_SAME; v <= V_NOISE; v++) {
		bool first = true;
		for (int r = 0; r < t->nr_rows; r++) {
			if (compare(er, t, r, &c) != v)
				continue;
			if (first)
				fprintf(f, "%s%s at numjobs ", any ? "; " : "", what[v]);
			else
				fprintf(f, ", ");
			fprintf(f, "%u (ours %.2fx, reference %.2fx)",
				er->exp->job.numjobs[c.ni], c.ours_ratio, c.ref_ratio);
			first = false;
			any = true;
		}
	}
	if (!any)
		fprintf(f, "not comparable: this run has no %s and %s figures at the reference's "
			"numjobs", t->base_mode, t->our_mode);
	fprintf(f, " (ratio: %s over %s)\n", t->our_mode, t->base_mode);
}

void reference_print(FILE *f, struct exp_result *er)
{
	const struct ref_table *t = ref_find(er->exp->name);
	struct ref_cmp c;

	if (!t)
		return;
	fprintf(f, "\nReference: %s\n  (%s; their figures, not re-measured)\n", t->source, t->setup);
	fprintf(f, "  %-8s %14s %14s %8s | ours, MiB/s: %-16s %-16s %8s\n", "numjobs",
		t->base_label, t->their_label, "ratio", t->base_mode, t->our_mode, "ratio");
	for (int r = 0; r < t->nr_rows; r++) {
		enum verdict v = compare(er, t, r, &c);
		char nj[16] = "theirs";
		if (t->rows[r].numjobs)
			snprintf(nj, sizeof(nj), "%u", t->rows[r].numjobs);
		fprintf(f, "  %-8s %7.0f %-6s %7.0f %-6s %7.2fx | ", nj, t->rows[r].base, t->unit,
			t->rows[r].theirs, t->unit, t->rows[r].theirs / t->rows[r].base);
		if (v == V_NONE)
			fprintf(f, "%s\n", c.ni < 0 ? "(numjobs not run)" : "(no figures)");
		else
			fprintf(f, "at numjobs %u: %16.1f %16.1f %7.2fx\n",
				er->exp->job.numjobs[c.ni], c.ours_base, c.ours_theirs, c.ours_ratio);
	}
	verdict_line(f, er, t);
}

static void json_s(FILE *f, const char *k, const char *v, bool comma)
{
	fprintf(f, "%s\"%s\": \"", comma ? ", " : "", k);
	for (; *v; v++)
		fprintf(f, *v == '"' || *v == '\\' ? "\\%c" : "%c", *v);
	fputc('"', f);
}

void reference_json(FILE *f, struct exp_result *er)
{
	static const char *const vname[] = { "none", "same", "opposite", "within_noise" };
	const struct ref_table *t = ref_find(er->exp->name);
	struct ref_cmp c;

	if (!t) {
		fprintf(f, "null");
		return;
	}
	fputc('{', f);
	json_s(f, "source", t->source, false);
	json_s(f, "setup", t->setup, true);
	json_s(f, "unit", t->unit, true);
	json_s(f, "base_mode", t->base_mode, true);
	json_s(f, "our_mode", t->our_mode, true);
	fprintf(f, ", \"rows\": [");
	for (int r = 0; r < t->nr_rows; r++) {
		enum verdict v = compare(er, t, r, &c);
		fprintf(f, "%s{\"numjobs\": %u, \"reference_base\": %.0f, \"reference_theirs\": %.0f, "
			"\"reference_ratio\": %.4f, \"ours_numjobs\": %u, \"ours_ratio\": ",
			r ? ", " : "", t->rows[r].numjobs, t->rows[r].base, t->rows[r].theirs,
			c.ref_ratio, c.ni >= 0 ? er->exp->job.numjobs[c.ni] : 0);
		if (v == V_NONE)
			fprintf(f, "null");
		else
			fprintf(f, "%.4f", c.ours_ratio);
		fprintf(f, ", \"verdict\": \"%s\"}", vname[v]);
	}
	fprintf(f, "]}");
}
