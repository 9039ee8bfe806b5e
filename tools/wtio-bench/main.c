/* SPDX-License-Identifier: MIT */
/*
 * main.c - wtio-bench: parse options, build the experiments (a suite or
 * the command line's job), set up the target (--xfs-loop), run each
 * experiment, print the results, clean up. Ctrl-C stops the run in
 * progress; what was measured is printed and temporary files are removed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "commit.h"
#include "dioalign.h"
#include "memcg.h"
#include "options.h"
#include "output.h"
#include "run.h"
#include "experiments.h"
#include "workload.h"
#include "xfsloop.h"

static void on_sigint(int sig)
{
	static const char msg[] =
		"\nwtio-bench: interrupted; stopping, reporting what was measured "
		"and removing temporary files (Ctrl-C again to quit at once)\n";
	static struct timespec first;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);	/* async-signal-safe */
	if (bench_interrupted) {
		/* One signal can come twice: timeout(1) sends it to the child and
		 * to its process group. Only a second Ctrl-C a moment later quits
		 * at once (leaving the files and any --xfs-loop image). */
		if (now.tv_sec - first.tv_sec < 2)
			return;
		/* No cleanup will run: at least leave no cgroup behind. */
		memcg_teardown_from_signal();
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	first = now;
	bench_interrupted = 1;
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing to do */
	}
}

static void at_exit_cleanup(void)
{
	cleanup_all(false);
}

static void emit(FILE *f, unsigned int formats, bool skip_normal,
		 struct exp_result *er, int n, const struct run_meta *m)
{
	if ((formats & FMT_NORMAL) && !skip_normal)
		output_normal(f, er, n, m);
	if (formats & FMT_JSON)
		output_json(f, er, n, m);
	if (formats & FMT_CSV)
		output_csv(f, er, n, m);
	if (formats & FMT_TERSE)
		output_terse(f, er, n, m);
}

/* --bs against each target's direct I/O alignment. Returns 0 or -1. */
static int check_bs(struct experiment *ex, struct exp_result *er, int n)
{
	char err[512];

	for (int i = 0; i < n; i++)
		if (dioalign_check(&ex[i].job, er[i].directory, err, sizeof(err))) {
			fprintf(stderr, "wtio-bench: %s: %s\nTry 'wtio-bench --help'.\n",
				ex[i].name, err);
			return -1;
		}
	return 0;
}

/*
 * --mem-limit=SIZE against what a kernel mode's trial allocates inside the
 * cgroup: a limit below it has the kernel kill wtio-bench there (exit 137,
 * no output, files and cgroup left behind). Measured peaks (kernel-direct,
 * no page cache): about 0.5M, 64-80K a thread, bs plus 4-5K a request;
 * the estimate is above each. Returns 0 or -1.
 */
static uint64_t mem_needed(unsigned int nj, const struct job_opts *j)
{
	return (4ull << 20) + (uint64_t)nj * (128u << 10) +
		(uint64_t)nj * j->iodepth * (j->bs + (8u << 10));
}

static int check_mem_limit(const struct bench_opts *o, struct experiment *ex, int n)
{
	char b1[32], b2[32];

	if (o->mem_policy != MEM_SIZE || o->raid.level)
		return 0;
	for (int i = 0; i < n; i++) {
		const struct job_opts *j = &ex[i].job;
		bool kernel = false;
		for (int m = 0; m < j->nr_modes; m++)
			kernel |= mode_table[j->modes[m]].family == FAMILY_KERNEL;
		for (int k = 0; kernel && k < j->nr_numjobs; k++) {
			uint64_t need = mem_needed(j->numjobs[k], j);
			if (o->mem_limit >= need)
				continue;
			need = (need + (1u << 20) - 1) >> 20 << 20;
			fprintf(stderr, "wtio-bench: --mem-limit=%s is below what %s's kernel modes "
				"allocate at numjobs=%u (threads and numjobs x iodepth x bs of I/O "
				"buffers: about %s); the kernel would kill wtio-bench in its cgroup\n"
				"Try 'wtio-bench --help'.\n", size_str(o->mem_limit, b1, sizeof(b1)),
				ex[i].name, j->numjobs[k], size_str(need, b2, sizeof(b2)));
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct experiment *ex;
	struct run_meta meta;
	char err[256];

	options_parse(argc, argv, &o);
	if (!wtio_check_version(WTIO_VERSION_MAJOR, WTIO_VERSION_MINOR)) {
		fprintf(stderr, "wtio-bench: libwtio %d.%d does not provide the %d.%d API\n",
			wtio_version_major(), wtio_version_minor(),
			WTIO_VERSION_MAJOR, WTIO_VERSION_MINOR);
		return 1;
	}
	int n = experiments_build(&o, &ex, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr, "wtio-bench: %s\nTry 'wtio-bench --help'.\n", err);
		return EXIT_USAGE;
	}
	if (check_mem_limit(&o, ex, n)) {
		free(ex);
		return EXIT_USAGE;
	}
	meta_fill(&meta, argc, argv, o.suite);
	snprintf(meta.commit, sizeof(meta.commit), "%s", WTIO_BENCH_COMMIT);
	meta.mem_policy = o.mem_policy == MEM_AUTO ? "auto" : o.mem_policy == MEM_OFF ? "off" : "size";
	if (o.mem_policy == MEM_OFF)
		snprintf(meta.mem_note, sizeof(meta.mem_note), "--mem-limit=off");
	else if (geteuid() != 0)
		snprintf(meta.mem_note, sizeof(meta.mem_note), "not root: no memory cgroup; the "
			 "kernel modes have all of the page cache, wtio only its --cache-size");
	meta.xfs_loop = o.xfs_loop;
	if (o.stripe_su)
		snprintf(meta.stripe, sizeof(meta.stripe), "su=%llu,sw=%u",
			 (unsigned long long)o.stripe_su, o.stripe_sw);

	struct exp_result *er = results_new(ex, n, o.directory);
	if (!er) {
		fprintf(stderr, "wtio-bench: out of memory\n");
		free(ex);
		return 1;
	}

	int rc = 0;
	FILE *out = stdout, *jf = NULL;
	if (o.output) {
		out = fopen(o.output, "w");
		if (!out) {
			fprintf(stderr, "wtio-bench: --output: %s: %s\n", o.output, strerror(errno));
			out = stdout;
			rc = EXIT_USAGE;
			goto done;
		}
	}

	/* --json=FILE opened now: a path that cannot be written fails before the run, not after. */
	if (o.json_path && !o.dry_run) {
		jf = fopen(o.json_path, "w");
		if (!jf) {
			fprintf(stderr, "wtio-bench: --json: %s: %s\n", o.json_path, strerror(errno));
			rc = EXIT_USAGE;
			goto done;
		}
	}

	/* Where the target is known already; else after --xfs-loop made it. */
	if (!o.xfs_loop && check_bs(ex, er, n)) {
		rc = EXIT_USAGE;
		goto done;
	}
	if (o.dry_run) {
		if (o.formats & FMT_NORMAL) {
			fprintf(out, "wtio-bench plan%s%s: %d experiment(s) in %s\n",
				o.suite ? " for suite " : "", o.suite ? o.suite : "", n,
				o.directory);
			double total = 0;
			for (int i = 0; i < n; i++) {
				const struct job_opts *j = &ex[i].job;
				fprintf(out, "  %s: %s\n    modes:", ex[i].name, ex[i].title);
				for (int m = 0; m < j->nr_modes; m++)
					fprintf(out, " %s", mode_table[j->modes[m]].name);
				fprintf(out, "\n    numjobs:");
				for (int k = 0; k < j->nr_numjobs; k++)
					fprintf(out, " %u", j->numjobs[k]);
				fprintf(out, "\n");
				total += experiment_estimate(&ex[i]);
			}
			if (total > 0)
				fprintf(out, "  estimated time: %.0f s plus file preparation\n", total);
		}
		emit(out, o.formats, true, er, n, &meta);
		goto done;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	atexit(at_exit_cleanup);

	if (o.xfs_loop) {
		if (xfsloop_setup(o.xfs_size, o.stripe_su, o.stripe_sw, o.directory,
				  sizeof(o.directory))) {
			rc = 1;
			goto done;
		}
		for (int i = 0; i < n; i++)
			snprintf(er[i].directory, sizeof(er[i].directory), "%s", o.directory);
		fprintf(stderr, "wtio-bench: running on a fresh XFS (loop device, direct I/O, "
			"image in /dev/shm, allocated in full) mounted at %s\n", o.directory);
	}
	if (o.xfs_loop && check_bs(ex, er, n)) {
		rc = EXIT_USAGE;
		goto done;
	}
	/* After the image is allocated: its pages are charged outside. */
	if (o.mem_policy != MEM_OFF && geteuid() == 0) {
		char why[300];
		if (memcg_setup(why, sizeof(why))) {
			if (o.mem_policy == MEM_SIZE) {
				fprintf(stderr, "wtio-bench: --mem-limit: %s\n", why);
				rc = 1;
				goto done;
			}
			snprintf(meta.mem_note, sizeof(meta.mem_note), "%s", why);
		} else {
			cleanup_add_final(memcg_teardown);
			o.memcg_on = true;
			meta.memcg = memcg_version();
			snprintf(meta.memcg_path, sizeof(meta.memcg_path), "%s", memcg_path());
		}
	}
	if (!meta.memcg)
		fprintf(stderr, "wtio-bench: NOTE: not an equal-memory comparison: %s\n",
			meta.mem_note);

	if (o.md_raid.level) {
		if (mdraid_setup(&o.md_raid, o.xfs_size, o.directory, sizeof(o.directory))) {
			rc = 1;
			goto done;
		}
		for (int i = 0; i < n; i++)
			snprintf(er[i].directory, sizeof(er[i].directory), "%s", o.directory);
		snprintf(meta.stripe, sizeof(meta.stripe), "md-raid%u,%u,%lluk", o.md_raid.level,
			 o.md_raid.disks, (unsigned long long)o.md_raid.chunk >> 10);
	}
	if (o.raid.level && bench_raid_setup(&o.raid, o.raid_su == 1, o.raid_cut == 1, o.directory,
					     meta.stripe, sizeof(meta.stripe))) {
		rc = 1;
		goto done;
	}

	/* The human table goes out as each experiment ends when stdout is
	 * the destination; other formats at the end. */
	bool stream_normal = (o.formats & FMT_NORMAL) && !o.output;
	double rest = 0;
	for (int i = 0; i < n; i++)
		rest += experiment_estimate(&ex[i]);
	for (int i = 0; i < n && !bench_interrupted; i++) {
		rest -= experiment_estimate(&ex[i]);
		int r = run_experiment(&ex[i], &o, &er[i], rest);
		if (r > rc)
			rc = r;
		if (stream_normal) {
			output_normal_one(stdout, &er[i], &meta);
			fflush(stdout);
		}
	}
	meta.interrupted = bench_interrupted;
	if (bench_interrupted)
		rc = 130;

	emit(out, o.formats, stream_normal, er, n, &meta);
	if (out != stdout)
		fclose(out);
	out = stdout;

	const char *json_path = o.json_path;
	char auto_json[512];
	if (!json_path && o.suite && !(o.formats & FMT_JSON)) {
		char stamp[32];
		time_t t = time(NULL);
		struct tm tm;
		localtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(auto_json, sizeof(auto_json), "wtio-bench-%s-%s.json", o.suite, stamp);
		json_path = auto_json;
	}
	if (json_path) {
		if (!jf)
			jf = fopen(json_path, "w");
		if (!jf) {
			fprintf(stderr, "wtio-bench: cannot write %s: %s\n", json_path, strerror(errno));
			if (!rc)
				rc = 1;
		} else {
			output_json(jf, er, n, &meta);
			fclose(jf);
			jf = NULL;
			char cwd[512];
			if (json_path[0] != '/' && getcwd(cwd, sizeof(cwd)))
				fprintf(stderr, "\nwtio-bench: JSON result written to %s/%s\n", cwd, json_path);
			else
				fprintf(stderr, "\nwtio-bench: JSON result written to %s\n", json_path);
		}
	}
	cleanup_all(o.keep_files);
done:
	if (jf) {
		fclose(jf);
		unlink(o.json_path);	/* opened, nothing measured into it */
	}
	if (out != stdout)
		fclose(out);
	results_free(er, n);
	free(ex);
	return rc;
}
