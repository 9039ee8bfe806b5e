/* SPDX-License-Identifier: MIT */
/*
 * workload.c - the measuring of one trial: numjobs threads issue the job's I/O through the
 * engine while the calling thread keeps time (ramp, measured window,
 * per-second samples, progress line).
 *
 * Accounting: a request is counted when it was issued inside the measured
 * window; it is then counted once more when it completes (bytes, ops,
 * latency). Runs drain what they issued, so issued == completed at the end
 * unless there were errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"
#include "workload.h"

volatile sig_atomic_t bench_interrupted;

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void set_err(struct thread_ctx *tc, int err, const char *what)
{
	if (!tc->err) {
		tc->err = err;
		snprintf(tc->err_what, sizeof(tc->err_what), "%s", what);
	}
	atomic_store(&tc->tr->failed, 1);
}

static void prep_io(struct thread_ctx *tc, struct io_u *u)
{
	const struct job_opts *job = tc->tr->job;
	unsigned int fslot = 0;

	if (tc->nr_files > 1)
		fslot = tc->next_file++ % tc->nr_files;
	u->fslot = fslot;
	u->f = tc->files[fslot];
	u->len = (uint32_t)job->bs;
	switch (job->rw) {
	case RW_READ:
	case RW_RANDREAD:
		u->is_read = true;
		break;
	case RW_RANDRW:
		u->is_read = rng_next(&tc->rng) % 100 < job->rwmixread;
		break;
	default:
		u->is_read = false;
	}
	if (job->rw == RW_WRITE && job->file_append) {
		if (tc->tr->files_per_thread == tc->tr->nr_files && tc->tr->numjobs > 1)
			u->off = atomic_fetch_add(&u->f->append_off, job->bs);
		else {
			u->off = tc->seq[fslot];
			tc->seq[fslot] += job->bs;
		}
	} else if (job->rw == RW_WRITE || job->rw == RW_READ) {
		if (tc->seq[fslot] < tc->seq_lo || tc->seq[fslot] + job->bs > tc->seq_hi)
			tc->seq[fslot] = tc->seq_lo;
		u->off = tc->seq[fslot];
		tc->seq[fslot] += job->bs;
	} else {
		uint64_t blocks = job->size / job->bs;
		u->off = (rng_next(&tc->rng) % blocks) * job->bs;
	}
}

/* Book-keeping of one finished request; returns to the free list. */
static void complete(struct thread_ctx *tc, struct io_u *u)
{
	struct trial *tr = tc->tr;
	const struct job_opts *job = tr->job;
	const struct engine_ops *eng = tr->eng;
	bool ok = u->res == (int64_t)u->len;

	if (u->res < 0) {
		set_err(tc, (int)u->res, u->is_read ? "read" : "write");
		if (u->measured)
			tc->c.errors++;
		tc->free_ius[tc->nr_free++] = u;
		return;
	}
	if (!ok && u->measured)
		tc->c.errors++;

	if (ok && !u->is_read && tr->mode->sfr_after_write) {
		int r = eng->sync_range(tc, u->f, u->off, u->len, 2 /* WRITE */);
		if (r)
			set_err(tc, r, "sync_file_range");
	}
	uint64_t end = now_ns();
	if (u->measured) {
		uint64_t b = u->res > 0 ? (uint64_t)u->res : 0;
		hist_add(&tc->hist, end - u->start_ns);
		tc->c.ops++;
		tc->c.bytes += b;
		if (u->is_read) {
			tc->c.read_ops++;
			tc->c.read_bytes += b;
		} else {
			tc->c.write_ops++;
			tc->c.write_bytes += b;
		}
		atomic_store_explicit(&tc->done_bytes, tc->c.bytes,
				      memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&tc->done_any, 1, memory_order_relaxed);

	if (ok && !u->is_read) {
		unsigned int s = u->fslot;
		if (tc->sync_lo[s] > u->off)
			tc->sync_lo[s] = u->off;
		if (tc->sync_hi[s] < u->off + u->len)
			tc->sync_hi[s] = u->off + u->len;
		if (job->sfr_every && ++tc->writes_since_sfr >= job->sfr_every) {
			tc->writes_since_sfr = 0;
			/* fio's sync_file_range=wait_before,write:N */
			int r = eng->sync_range(tc, u->f, tc->sync_lo[s],
						tc->sync_hi[s] - tc->sync_lo[s],
						1 | 2);
			tc->sync_lo[s] = UINT64_MAX;
			tc->sync_hi[s] = 0;
			if (r)
				set_err(tc, r, "sync_file_range");
			if (u->measured)
				tc->c.syncs++;
		}
		if (job->fsync_every && ++tc->writes_since_fsync >= job->fsync_every) {
			tc->writes_since_fsync = 0;
			int r = eng->fsync(tc, u->f);
			if (r)
				set_err(tc, r, "fsync");
			if (u->measured)
				tc->c.syncs++;
		}
	}
	tc->free_ius[tc->nr_free++] = u;
}

/* May this thread issue one more request? Sets *measured. */
static bool may_issue(struct thread_ctx *tc, uint64_t quota, bool *measured)
{
	struct trial *tr = tc->tr;
	int ph = atomic_load_explicit(&tr->phase, memory_order_relaxed);

	if (ph == PH_STOP || atomic_load_explicit(&tr->failed, memory_order_relaxed))
		return false;
	*measured = ph == PH_MEASURE;
	if (*measured && !tr->job->time_based && tc->c.issued_bytes >= quota)
		return false;
	return true;
}

static void loop_io(struct thread_ctx *tc, uint64_t quota)
{
	const struct engine_ops *eng = tc->tr->eng;
	struct io_u **done = calloc(tc->depth, sizeof(*done));
	unsigned int inflight = 0;
	bool measured;

	if (!done) {
		set_err(tc, -ENOMEM, "setup");
		return;
	}
	for (;;) {
		while (tc->nr_free && may_issue(tc, quota, &measured)) {
			struct io_u *u = tc->free_ius[--tc->nr_free];
			prep_io(tc, u);
			u->measured = measured;
			if (measured) {
				tc->c.issued_ops++;
				tc->c.issued_bytes += u->len;
			}
			u->start_ns = now_ns();
			int r = eng->queue(tc, u);
			if (r < 0) {
				u->res = r;
				complete(tc, u);
			} else if (r > 0) {
				complete(tc, u);
			} else {
				inflight++;
			}
		}
		if (!inflight) {
			if (!tc->nr_free)
				continue;	/* cannot happen: all free */
			break;			/* may_issue said stop */
		}
		int n = eng->reap(tc, 1, done, inflight);
		if (n < 0) {
			set_err(tc, n, "reap");
			break;
		}
		for (int i = 0; i < n; i++)
			complete(tc, done[i]);
		inflight -= (unsigned int)n;
	}
	/* Drain what is left (only after a reap error, nothing to do). */
	free(done);
}

static void loop_create(struct thread_ctx *tc, uint64_t quota)
{
	const struct engine_ops *eng = tc->tr->eng;
	struct io_u *u = &tc->ius[0];
	char path[PATH_MAX + 32];
	bool measured;

	while (may_issue(tc, quota, &measured)) {
		snprintf(path, sizeof(path), "%s/f%llu", tc->dir,
			 (unsigned long long)tc->created);
		u->len = (uint32_t)tc->tr->job->bs;
		u->is_read = false;
		u->measured = measured;
		if (measured) {
			tc->c.issued_ops++;
			tc->c.issued_bytes += u->len;
		}
		u->start_ns = now_ns();
		int r = eng->create_file(tc, path, u->buf, u->len);
		tc->created++;
		if (r) {
			set_err(tc, r, "create");
			break;
		}
		uint64_t end = now_ns();
		if (measured) {
			hist_add(&tc->hist, end - u->start_ns);
			tc->c.ops++;
			tc->c.bytes += u->len;
			tc->c.write_ops++;
			tc->c.write_bytes += u->len;
			atomic_store_explicit(&tc->done_bytes, tc->c.bytes,
					      memory_order_relaxed);
		}
		atomic_fetch_add_explicit(&tc->done_any, 1, memory_order_relaxed);
	}
}

/* A thread arrives at the start line and waits for it to open. */
static void start_arrive(struct trial *tr)
{
	pthread_mutex_lock(&tr->start_lock);
	tr->start_arrived++;
	pthread_cond_broadcast(&tr->start_cond);
	while (!tr->start_open)
		pthread_cond_wait(&tr->start_cond, &tr->start_lock);
	pthread_mutex_unlock(&tr->start_lock);
}

/* Once the nr started threads are at the line, let them all go. */
static void start_open(struct trial *tr, unsigned int nr)
{
	pthread_mutex_lock(&tr->start_lock);
	while (tr->start_arrived < nr)
		pthread_cond_wait(&tr->start_cond, &tr->start_lock);
	tr->start_open = true;
	pthread_cond_broadcast(&tr->start_cond);
	pthread_mutex_unlock(&tr->start_lock);
}

static void *thread_main(void *arg)
{
	struct thread_ctx *tc = arg;
	struct trial *tr = tc->tr;
	const struct job_opts *job = tr->job;
	uint64_t quota = job->io_size ? job->io_size : job->size;
	int ret = 0;

	if (tr->eng->thread_init) {
		ret = tr->eng->thread_init(tc);
		if (ret)
			set_err(tc, ret, "engine setup");
	}
	start_arrive(tr);
	if (!ret) {
		if (job->rw == RW_CREATE)
			loop_create(tc, quota);
		else
			loop_io(tc, quota);
	}
	tc->finish_ns = now_ns();
	if (tr->eng->thread_exit)
		tr->eng->thread_exit(tc);
	atomic_fetch_add(&tr->nr_finished, 1);
	return NULL;
}

static int setup_thread(struct trial *tr, struct thread_ctx *tc, unsigned int id)
{
	const struct job_opts *job = tr->job;
	bool async = tr->eng->reap != NULL;
	size_t buflen = (job->bs + 4095) & ~(size_t)4095;

	memset(tc, 0, sizeof(*tc));
	tc->tr = tr;
	tc->id = id;
	tc->depth = async ? job->iodepth : 1;
	hist_init(&tc->hist);
	/* Same seed in every mode: every mode sees the same offsets. */
	tc->rng = 0x9E3779B97F4A7C15ull * (id + 1) ^ 0xD1B54A32D192ED03ull;
	tc->nr_files = tr->files_per_thread;
	tc->files = calloc(tc->nr_files, sizeof(*tc->files));
	tc->seq = calloc(tc->nr_files, sizeof(*tc->seq));
	tc->sync_lo = calloc(tc->nr_files, sizeof(*tc->sync_lo));
	tc->sync_hi = calloc(tc->nr_files, sizeof(*tc->sync_hi));
	tc->ius = calloc(tc->depth, sizeof(*tc->ius));
	tc->free_ius = calloc(tc->depth, sizeof(*tc->free_ius));
	if (!tc->files || !tc->seq || !tc->sync_lo || !tc->sync_hi || !tc->ius ||
	    !tc->free_ius)
		return -ENOMEM;
	bool shared = tr->files_per_thread == tr->nr_files;
	for (unsigned int i = 0; i < tc->nr_files; i++) {
		tc->files[i] = &tr->files[shared ? i : id * tr->files_per_thread + i];
		tc->sync_lo[i] = UINT64_MAX;
	}
	/* Sequential I/O on a shared file: each thread its own region. */
	uint64_t blocks = job->size / job->bs;
	if (shared && tr->numjobs > 1 && blocks >= tr->numjobs) {
		uint64_t per = blocks / tr->numjobs;
		tc->seq_lo = id * per * job->bs;
		tc->seq_hi = (id + 1) * per * job->bs;
	} else {
		tc->seq_lo = 0;
		tc->seq_hi = blocks * job->bs;
	}
	for (unsigned int i = 0; i < tc->nr_files; i++)
		tc->seq[i] = tc->seq_lo;
	for (unsigned int i = 0; i < tc->depth; i++) {
		if (posix_memalign(&tc->ius[i].buf, 4096, buflen))
			return -ENOMEM;
		/* Incompressible, non-zero data. */
		uint64_t s = 0x1234567ull + id * 7919u + i;
		uint64_t *p = tc->ius[i].buf;
		for (size_t k = 0; k < buflen / 8; k++)
			p[k] = rng_next(&s) | 1;
		tc->free_ius[tc->nr_free++] = &tc->ius[i];
	}
	if (job->rw == RW_CREATE) {
		snprintf(tc->dir, sizeof(tc->dir), "%s.d%u", tr->dir, id);
		if (mkdir(tc->dir, 0755) && errno != EEXIST)
			return -errno;
	}
	return 0;
}

static void free_thread(struct thread_ctx *tc)
{
	if (tc->ius)
		for (unsigned int i = 0; i < tc->depth; i++)
			free(tc->ius[i].buf);
	free(tc->ius);
	free(tc->free_ius);
	free(tc->files);
	free(tc->seq);
	free(tc->sync_lo);
	free(tc->sync_hi);
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static uint64_t sum_done(struct trial *tr)
{
	uint64_t s = 0;

	for (unsigned int i = 0; i < tr->numjobs; i++)
		s += atomic_load_explicit(&tr->threads[i].done_bytes,
					  memory_order_relaxed);
	return s;
}

int trial_measure(struct trial *tr, struct mode_result *res,
		  const struct progress_ctx *pc)
{
	const struct job_opts *job = tr->job;
	unsigned int n = tr->numjobs;
	pthread_t *tids = calloc(n, sizeof(*tids));
	int ret = 0;
	unsigned int started = 0;

	tr->threads = calloc(n, sizeof(*tr->threads));
	if (!tids || !tr->threads) {
		free(tids);
		free(tr->threads);
		return -ENOMEM;
	}
	atomic_store(&tr->failed, 0);
	atomic_store(&tr->nr_finished, 0);
	atomic_store(&tr->phase, job->ramp_time > 0 ? PH_RAMP : PH_MEASURE);
	for (unsigned int i = 0; i < n; i++) {
		ret = setup_thread(tr, &tr->threads[i], i);
		if (ret) {
			snprintf(res->reason, sizeof(res->reason),
				 "setup: %s", strerror(-ret));
			for (unsigned int k = 0; k <= i; k++)
				free_thread(&tr->threads[k]);
			free(tr->threads);
			free(tids);
			tr->threads = NULL;
			return ret;
		}
	}
	pthread_mutex_init(&tr->start_lock, NULL);
	pthread_cond_init(&tr->start_cond, NULL);
	tr->start_arrived = 0;
	tr->start_open = false;
	for (unsigned int i = 0; i < n; i++) {
		int e = pthread_create(&tids[i], NULL, thread_main, &tr->threads[i]);
		if (e) {
			/* The threads started are let go and stop at once. */
			ret = -e;
			snprintf(res->reason, sizeof(res->reason),
				 "cannot create thread %u: %s", i, strerror(e));
			atomic_store(&tr->failed, 1);
			atomic_store(&tr->phase, PH_STOP);
			break;
		}
		started++;
	}
	/* With no ramp the threads measure from the moment they are let go:
	 * the window opens before the start line does. */
	uint64_t tstart = now_ns();
	double cpu_start = cpu_seconds();
	start_open(tr, started);

	double total_s = job->ramp_time + job->runtime;
	uint64_t last_prog = 0;
	bool stopped_by_time = false;

	while (job->ramp_time > 0 && !bench_interrupted &&
	       !atomic_load(&tr->failed) && atomic_load(&tr->nr_finished) < n &&
	       (double)(now_ns() - tstart) / 1e9 < job->ramp_time) {
		sleep_ms(10);
		if (pc->enabled && now_ns() - last_prog > 250000000ull) {
			last_prog = now_ns();
			progress_show(pc->label, (double)(last_prog - tstart) / 1e9,
				      total_s, pc->rest_s, -1.0);
		}
	}
	uint64_t t0 = tstart, t1 = 0;
	double cpu0 = cpu_start;
	if (job->ramp_time > 0) {
		t0 = now_ns();
		cpu0 = cpu_seconds();
		atomic_store(&tr->phase, PH_MEASURE);
	}
	uint64_t last_sample_t = t0, last_sample_b = 0;
	int cap = 64;
	res->samples = job->samples ? calloc((size_t)cap, sizeof(double)) : NULL;

	for (;;) {
		if (bench_interrupted) {
			atomic_store(&tr->phase, PH_STOP);
			t1 = now_ns();
			stopped_by_time = true;
			break;
		}
		if (atomic_load(&tr->failed) || atomic_load(&tr->nr_finished) >= n)
			break;
		uint64_t now = now_ns();
		if (job->runtime > 0 && (double)(now - t0) / 1e9 >= job->runtime) {
			atomic_store(&tr->phase, PH_STOP);
			t1 = now;
			stopped_by_time = true;
			break;
		}
		if (res->samples && now - last_sample_t >= 1000000000ull) {
			uint64_t b = sum_done(tr);
			if (res->nr_samples == cap) {
				cap *= 2;
				double *ns = realloc(res->samples, (size_t)cap * sizeof(double));
				if (ns)
					res->samples = ns;
				else
					cap /= 2;
			}
			if (res->nr_samples < cap)
				res->samples[res->nr_samples++] =
					(double)(b - last_sample_b) / 1048576.0 /
					((double)(now - last_sample_t) / 1e9);
			last_sample_b = b;
			last_sample_t = now;
		}
		if (pc->enabled && now - last_prog > 250000000ull) {
			double el = (double)(now - t0) / 1e9;
			last_prog = now;
			progress_show(pc->label, job->ramp_time + el, total_s,
				      pc->rest_s, el > 0 ? (double)sum_done(tr) / 1048576.0 / el : 0);
		}
		sleep_ms(job->runtime > 0 && job->runtime < 2 ? 2 : 10);
	}
	for (unsigned int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	double cpu1 = cpu_seconds();
	if (pc->enabled)
		progress_clear();
	if (!stopped_by_time) {
		t1 = t0;
		for (unsigned int i = 0; i < n; i++)
			if (tr->threads[i].finish_ns > t1)
				t1 = tr->threads[i].finish_ns;
	}
	res->elapsed_s = (double)(t1 - t0) / 1e9;
	res->cpu_s = cpu1 - cpu0;
	hist_init(&res->hist);
	memset(&res->c, 0, sizeof(res->c));
	for (unsigned int i = 0; i < n; i++) {
		struct thread_ctx *tc = &tr->threads[i];
		hist_merge(&res->hist, &tc->hist);
		counts_merge(&res->c, &tc->c);
		if (tc->err && !ret) {
			ret = tc->err;
			snprintf(res->reason, sizeof(res->reason), "%s: %s",
				 tc->err_what, strerror(-ret));
		}
		free_thread(tc);
	}
	pthread_cond_destroy(&tr->start_cond);
	pthread_mutex_destroy(&tr->start_lock);
	free(tr->threads);
	tr->threads = NULL;
	free(tids);
	return ret;
}
