/* SPDX-License-Identifier: MIT */
/*
 * run.c - one experiment. For each numjobs: make the file set (one shared
 * set, or one per job), prepare it once (written in full for overwrites
 * and reads), then run each mode in turn on it: sync and drop the page
 * cache between modes (root), reset the files of non-overwrite writes,
 * open through the mode's engine, run, close (timed apart), collect.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "engine.h"
#include "figures.h"
#include "memcg.h"
#include "perfrec.h"
#include "progress.h"
#include "run.h"
#include "workload.h"

const char *status_name(enum run_status s)
{
	static const char *n[] = { "not-run", "ok", "unsupported", "error",
				   "interrupted" };
	return n[s];
}

struct exp_result *results_new(struct experiment *ex, int n, const char *dir)
{
	struct exp_result *er = calloc((size_t)n, sizeof(*er));
	struct wtio_config cfg;

	if (!er)
		return NULL;
	wtio_config_init(&cfg);
	for (int i = 0; i < n; i++) {
		const struct job_opts *j = &ex[i].job;
		int nr = j->nr_numjobs * j->nr_modes, rep = (int)j->repeat;

		er[i].exp = &ex[i];
		er[i].res = calloc((size_t)nr, sizeof(*er[i].res));
		er[i].runs = calloc((size_t)(nr * rep), sizeof(*er[i].runs));
		if (!er[i].res || !er[i].runs) {
			results_free(er, i + 1);
			return NULL;
		}
		for (int k = 0; k < nr * rep; k++) {
			struct mode_result *r = &er[i].runs[k];
			r->mode = j->modes[(k / rep) % j->nr_modes];
			r->numjobs = j->numjobs[k / rep / j->nr_modes];
			r->repeat = (unsigned int)(k % rep);
			if (k % rep == 0)
				er[i].res[k / rep] = *r;
		}
		er[i].cache_size = j->cache_size ? j->cache_size : cfg.cache_size;
		snprintf(er[i].directory, sizeof(er[i].directory), "%s", dir);
	}
	return er;
}

void results_free(struct exp_result *er, int n)
{
	if (!er)
		return;
	for (int i = 0; i < n; i++) {
		const struct job_opts *j = &er[i].exp->job;
		/* A cell's samples are its median run's: freed with the runs. */
		for (int k = 0; er[i].runs && k < j->nr_numjobs * j->nr_modes * (int)j->repeat; k++)
			free(er[i].runs[k].samples);
		free(er[i].runs);
		free(er[i].res);
	}
	free(er);
}

double experiment_estimate(const struct experiment *ex)
{
	const struct job_opts *j = &ex->job;
	if (j->runtime <= 0)
		return 0;
	return (j->runtime + j->ramp_time + 0.5) * j->nr_modes * j->nr_numjobs * j->repeat;
}

/* Expand $pid, $jobnum, $filenum, $exp in the file name format. */
static void file_name(char *out, size_t len, const char *dir, const char *fmt,
		      const char *exp, unsigned int job, unsigned int fnum)
{
	char name[512];
	size_t o = 0;

	for (const char *p = fmt; *p && o < sizeof(name) - 32; ) {
		if (!strncmp(p, "$pid", 4)) {
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%d", (int)getpid());
			p += 4;
		} else if (!strncmp(p, "$jobnum", 7)) {
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%u", job);
			p += 7;
		} else if (!strncmp(p, "$filenum", 8)) {
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%u", fnum);
			p += 8;
		} else if (!strncmp(p, "$exp", 4)) {
			o += (size_t)snprintf(name + o, sizeof(name) - o, "%s", exp);
			p += 4;
		} else {
			name[o++] = *p++;
		}
	}
	name[o] = 0;
	snprintf(out, len, "%s/%s.%s", dir, name, exp);
}

static void drop_caches(bool drop, bool *dropped)
{
	sync();
	if (!drop || geteuid() != 0)
		return;
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		return;
	if (write(fd, "3", 1) == 1)
		*dropped = true;
	close(fd);
}

/* Write the whole file with non-zero data, then fsync. */
static int fill_file(const char *path, uint64_t size)
{
	size_t chunk = 1u << 20;
	char *buf = malloc(chunk);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	int ret = 0;

	if (!buf || fd < 0) {
		ret = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < chunk; i++)
		buf[i] = (char)(i * 131 + 7) | 1;
	if (posix_fallocate(fd, 0, (off_t)size) == 0) {
		/* fine; written below anyway */
	}
	for (uint64_t off = 0; off < size && !bench_interrupted; off += chunk) {
		size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
		buf[0] = (char)(off >> 20);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w != (ssize_t)n) {
			/* A short write sets no errno (a stale one said ENOENT): the
			 * filesystem is full. */
			ret = w < 0 ? -errno : -ENOSPC;
			goto out;
		}
	}
	if (ftruncate(fd, (off_t)size) || fsync(fd))
		ret = -errno;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* Non-overwrite writes: every mode starts from the same state. */
static int reset_file(const char *path, uint64_t size, bool append)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, 0))
		ret = -errno;
	else if (!append && posix_fallocate(fd, 0, (off_t)size) &&
		 ftruncate(fd, (off_t)size))
		ret = -errno;
	if (fsync(fd) && !ret)
		ret = -errno;
	close(fd);
	return ret;
}

static bool file_ok(const char *path, uint64_t size)
{
	struct stat st;
	return !stat(path, &st) && (uint64_t)st.st_size == size;
}

static void classify(struct mode_result *r, int err)
{
	if (bench_interrupted && r->status != RS_UNSUPPORTED) {
		r->status = RS_INTERRUPTED;
		return;
	}
	if (!err) {
		r->status = RS_OK;
		return;
	}
	r->status = (err == -EOPNOTSUPP) ? RS_UNSUPPORTED : RS_ERROR;
	if (r->status == RS_UNSUPPORTED) {
		/* A refused mode has no figures, not zeros from a failed try. */
		memset(&r->c, 0, sizeof(r->c));
		hist_init(&r->hist);
		r->elapsed_s = r->cpu_s = 0;
		free(r->samples);
		r->samples = NULL;
		r->nr_samples = 0;
	}
}

/*
 * A kernel mode's trial runs in the memory cgroup: its limit, and the
 * files' cached pages dropped first, so that what it caches is charged
 * inside (pages the preparation left would be free hits otherwise).
 */
static int limit_enter(const struct bench_opts *o, const struct exp_result *er,
		       unsigned int nj, struct bfile *files, unsigned int nr_files,
		       struct mode_result *r)
{
	const struct job_opts *job = &er->exp->job;

	r->mem_limit = o->mem_policy == MEM_SIZE ? o->mem_limit :
		er->cache_size + MEM_ALLOWANCE + (uint64_t)nj * job->iodepth * job->bs;
	for (unsigned int i = 0; i < nr_files; i++) {
		int fd = open(files[i].path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fdatasync(fd) == 0)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	int ret = memcg_enter(r->mem_limit);
	if (ret) {
		r->status = RS_ERROR;
		snprintf(r->reason, sizeof(r->reason), "memory cgroup %s: %s", memcg_path(),
			 strerror(-ret));
	}
	return ret;
}

/* --perf: the profile's file for this trial. */
static pid_t perf_begin(const struct bench_opts *o, const struct experiment *ex,
			const struct mode_def *m, unsigned int nj, const struct mode_result *r)
{
	char path[PATH_MAX];

	if (!o->perf)
		return -1;
	snprintf(path, sizeof(path), "perf-%s-%s-nj%u-r%u.data", ex->name, m->name, nj,
		 r->repeat + 1);
	return perfrec_start(path);
}

/*
 * One trial of one mode at one numjobs on the prepared files: start the
 * engine, open, pre-read, measure (trial_measure), close (timed apart),
 * collect the wtio stats and the files' sizes. A kernel mode runs inside
 * the memory cgroup when there is one (limit_enter .. memcg_leave).
 */
static int run_trial(struct experiment *ex, const struct bench_opts *o,
		     struct exp_result *er, unsigned int nj,
		     struct bfile *files, unsigned int nr_files,
		     unsigned int files_per_thread, int mi,
		     struct mode_result *r, double rest_s)
{
	const struct job_opts *job = &ex->job;
	const struct mode_def *m = &mode_table[job->modes[mi]];
	const char *why;
	struct trial tr;
	char label[128], cdir[PATH_MAX];
	int ret;

	r->mode = job->modes[mi];
	r->numjobs = nj;
	const struct engine_ops *eng = engine_pick(m, job, &why);
	if (!eng) {
		r->status = RS_UNSUPPORTED;
		snprintf(r->reason, sizeof(r->reason), "%s", why);
		return 0;
	}
	r->engine = eng->name;

	drop_caches(job->invalidate, &er->caches_dropped);
	if (job->rw == RW_WRITE || job->rw == RW_RANDWRITE) {
		if (!job->overwrite)
			for (unsigned int i = 0; i < nr_files; i++) {
				ret = reset_file(files[i].path, job->size, job->file_append);
				if (ret) {
					r->status = RS_ERROR;
					snprintf(r->reason, sizeof(r->reason),
						 "prepare %s: %s", files[i].path, strerror(-ret));
					return 1;
				}
			}
	}
	if (job->file_append)
		for (unsigned int i = 0; i < nr_files; i++)
			atomic_store(&files[i].append_off, 0);

	memset(&tr, 0, sizeof(tr));
	tr.job = job;
	tr.mode = m;
	tr.eng = eng;
	tr.numjobs = nj;
	tr.files = files;
	tr.nr_files = nr_files;
	tr.files_per_thread = files_per_thread;
	tr.open_flags = O_RDWR | m->oflags | (job->dsync ? O_DSYNC : 0);
	if (job->rw == RW_CREATE)
		tr.open_flags = O_WRONLY | m->oflags | (job->dsync ? O_DSYNC : 0);
	tr.wflags = m->wflags | (job->dsync ? WTIO_DSYNC : 0);
	tr.rflags = m->rflags;
	snprintf(cdir, sizeof(cdir), "%s/wtio-bench.%d.%s", er->directory,
		 (int)getpid(), ex->name);
	tr.dir = cdir;

	bool limited = o->memcg_on && m->family == FAMILY_KERNEL;
	if (limited && limit_enter(o, er, nj, files, nr_files, r))
		return 1;
	if (eng->mode_init && (ret = eng->mode_init(&tr))) {
		if (limited)
			memcg_leave();
		classify(r, ret);
		snprintf(r->reason, sizeof(r->reason), "setup: %s%s",
			 strerror(-ret), ret == -EINVAL && m->family != FAMILY_KERNEL &&
			 (getenv("WTIO_LARGE_FOLIOS") || getenv("WTIO_IO_CHANNEL")) ?
			 " (WTIO_LARGE_FOLIOS takes 0 or 1, WTIO_IO_CHANNEL aio or io_uring)" : "");
		return r->status == RS_ERROR;
	}
	unsigned int opened = 0;
	ret = 0;
	for (; opened < nr_files; opened++) {
		files[opened].fd = -1;
		files[opened].wf = NULL;
		ret = eng->open_file(&tr, &files[opened]);
		if (ret) {
			snprintf(r->reason, sizeof(r->reason), "open: %s", strerror(-ret));
			break;
		}
	}
	if (!ret && job->pre_read) {
		size_t chunk = 1u << 20;
		void *buf = NULL;
		if (posix_memalign(&buf, 4096, chunk))
			ret = -ENOMEM;
		for (unsigned int i = 0; !ret && i < nr_files; i++)
			for (uint64_t off = 0; off < job->size && !bench_interrupted; off += chunk) {
				long n = eng->read_file(&tr, &files[i], buf, chunk, off);
				if (n < 0) {
					ret = (int)n;
					snprintf(r->reason, sizeof(r->reason),
						 "pre_read: %s", strerror(-ret));
					break;
				}
				if (n == 0)
					break;
			}
		free(buf);
	}
	if (!ret) {
		struct progress_ctx pc = { progress_wanted(o->progress), label, rest_s };
		snprintf(label, sizeof(label), "%s %s numjobs=%u", ex->name, m->name, nj);
		pid_t perf = perf_begin(o, ex, m, nj, r);
		ret = trial_measure(&tr, r, &pc);
		perfrec_stop(perf);
	}
	struct wtio_file_info info;
	if (opened && files[0].wf && !wtio_file_info(files[0].wf, &info)) {
		r->stripe_unit = info.stripe_unit;
		r->stripe_width = info.stripe_width;
		snprintf(r->stripe_source, sizeof(r->stripe_source), "%s", info.stripe_source);
	}
	uint64_t t = now_ns();
	for (unsigned int i = 0; i < opened; i++) {
		int cret = eng->close_file(&tr, &files[i]);
		if (cret && !ret) {
			ret = cret;
			snprintf(r->reason, sizeof(r->reason), "close: %s", strerror(-ret));
		}
	}
	r->flush_s = (double)(now_ns() - t) / 1e9;
	if (m->family == FAMILY_WTIO && tr.wctx) {
		r->have_wstats = wtio_stats(tr.wctx, &r->wst) == 0;
		r->wtio_backend = wtio_ctx_backend_name(tr.wctx);
	}
	if (eng->mode_exit)
		eng->mode_exit(&tr);
	if (limited) {
		r->mem_peak = memcg_peak();
		int lret = memcg_leave();
		if (lret && !ret) {
			ret = lret;
			snprintf(r->reason, sizeof(r->reason), "leaving the memory cgroup: %s",
				 strerror(-ret));
		}
	}
	classify(r, ret);
	if (job->rw == RW_CREATE) {
		/* the created files are counted and removed here */
		for (unsigned int i = 0; i < nj; i++) {
			char d[PATH_MAX + 16];
			snprintf(d, sizeof(d), "%s.d%u", cdir, i);
			struct stat st;
			uint64_t count = 0;
			char p[PATH_MAX + 48];
			for (;; count++) {
				snprintf(p, sizeof(p), "%s/f%llu", d, (unsigned long long)count);
				if (stat(p, &st))
					break;
				r->file_bytes += (uint64_t)st.st_size;
			}
			if (!o->keep_files)
				cleanup_remove_created(d, count);
		}
	} else {
		for (unsigned int i = 0; i < nr_files; i++) {
			struct stat st;
			if (!stat(files[i].path, &st))
				r->file_bytes += (uint64_t)st.st_size;
		}
	}
	return r->status == RS_ERROR;
}

/* Trials of the whole run, numbered in the order they ran. */
static unsigned int trial_order;

int run_experiment(struct experiment *ex, const struct bench_opts *o,
		   struct exp_result *er, double rest_s)
{
	const struct job_opts *job = &ex->job;
	int failed = 0, prep_failed = 0;

	er->exp = ex;
	if (!er->res || !er->runs)
		return 1;
	struct statfs sfs;
	if (!statfs(er->directory, &sfs)) {
		const char *t = "other";
		switch ((unsigned long)sfs.f_type) {
		case 0xEF53: t = "ext4"; break;
		case 0x58465342: t = "xfs"; break;
		case 0x9123683E: t = "btrfs"; break;
		case 0x01021994: t = "tmpfs"; break;
		case 0x794c7630: t = "overlayfs"; break;
		}
		snprintf(er->fstype, sizeof(er->fstype), "%s", t);
	}
	double per_run = job->runtime > 0 ? job->runtime + job->ramp_time + 0.5 : 0;
	int runs_left = job->nr_numjobs * job->nr_modes * (int)job->repeat;
	bool shared = !job->per_job_files;
	bool need_data = job->overwrite || job->rw == RW_READ ||
			 job->rw == RW_RANDREAD || job->rw == RW_RANDRW;

	for (int ni = 0; ni < job->nr_numjobs; ni++) {
		unsigned int nj = job->numjobs[ni];
		unsigned int fpt = job->nrfiles;
		unsigned int nr_files = job->rw == RW_CREATE ? 0 : (shared ? fpt : nj * fpt);
		struct bfile *files = calloc(nr_files ? nr_files : 1, sizeof(*files));
		if (!files)
			return 1;
		for (unsigned int i = 0; i < nr_files; i++) {
			file_name(files[i].path, sizeof(files[i].path), er->directory,
				  job->filename_format, ex->name,
				  shared ? 0 : i / fpt, i % fpt);
			files[i].fd = -1;
			cleanup_add_file(files[i].path);
		}
		/* Prepare once per file set (a shared set serves every numjobs). */
		for (unsigned int i = 0; i < nr_files && !bench_interrupted; i++) {
			int ret = 0;
			if (need_data && !file_ok(files[i].path, job->size))
				ret = fill_file(files[i].path, job->size);
			else if (!need_data)
				ret = reset_file(files[i].path, job->size, job->file_append);
			if (ret) {
				struct mode_result *r = exp_run(er, ni, 0, 0);
				r->status = RS_ERROR;
				snprintf(r->reason, sizeof(r->reason), "prepare %s: %s",
					 files[i].path, strerror(-ret));
				failed = prep_failed = 1;
				break;
			}
		}
		/* Repeats alternate the modes (A B A B), so that a drift of the
		 * machine spreads over all of them instead of favouring one. */
		for (unsigned int rep = 0; rep < job->repeat; rep++)
			for (int mi = 0; mi < job->nr_modes; mi++) {
				struct mode_result *r = exp_run(er, ni, mi, (int)rep);
				runs_left--;
				if (bench_interrupted || prep_failed) {
					if (r->status == RS_NOT_RUN && prep_failed && !bench_interrupted)
						snprintf(r->reason, sizeof(r->reason),
							 "not run: preparation failed");
					continue;
				}
				r->order = ++trial_order;
				if (run_trial(ex, o, er, nj, files, nr_files, shared ? nr_files : fpt,
					      mi, r, rest_s + per_run * runs_left))
					failed = 1;
			}
		for (int mi = 0; mi < job->nr_modes; mi++)
			cell_summarize(exp_run(er, ni, mi, 0), (int)job->repeat, exp_res(er, ni, mi));
		if (!shared || ni == job->nr_numjobs - 1)
			for (unsigned int i = 0; i < nr_files; i++)
				if (!o->keep_files)
					cleanup_remove_file(files[i].path);
		free(files);
	}
	if (bench_interrupted)
		return 130;
	return failed;
}
