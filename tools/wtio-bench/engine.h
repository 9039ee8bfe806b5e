/* SPDX-License-Identifier: MIT */
/*
 * engine.h - the I/O engines behind one ops table (fio's shape), and the
 * state of one trial (one mode at one numjobs, once) that they work on.
 *
 * An engine's queue() either completes the request at once (returns 1,
 * u->res set) or queues it (returns 0) for a later reap(). The run loop in
 * workload.c does the rest: offsets, timing, accounting, sync_file_range
 * and fsync cadence.
 */
#ifndef WTIO_BENCH_ENGINE_H
#define WTIO_BENCH_ENGINE_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "modes.h"
#include "options.h"
#include "stats.h"
#include "wtio.h"

struct bfile {
	char path[PATH_MAX];
	int fd;				/* kernel engines */
	struct wtio_file *wf;		/* wtio engines */
	_Atomic uint64_t append_off;	/* next extending write (shared) */
};

struct io_u {
	void *buf;
	uint64_t off;
	uint32_t len;
	bool is_read;
	bool measured;		/* issued while measuring: counted */
	uint64_t start_ns;
	struct bfile *f;
	unsigned int fslot;	/* index in the thread's files */
	int64_t res;		/* bytes or negative errno */
	unsigned char priv[96];	/* engine's per-request state (an iocb) */
};

enum phase {
	PH_RAMP,
	PH_MEASURE,
	PH_STOP,
};

struct thread_ctx;

/* One trial: what its threads and its engine share. */
struct trial {
	const struct job_opts *job;
	const struct mode_def *mode;
	const struct engine_ops *eng;
	unsigned int numjobs;
	struct bfile *files;		/* all files of the run */
	unsigned int nr_files;
	unsigned int files_per_thread;	/* shared set: all; else nrfiles */
	int open_flags;			/* kernel: open(2) flags */
	unsigned int wflags, rflags;	/* wtio: per-call flags */
	struct wtio_ctx *wctx;
	_Atomic int phase;
	_Atomic int failed;
	_Atomic unsigned int nr_finished;
	unsigned int region_blocks;	/* shared sequential: blocks per thread */
	const char *dir;		/* for RW_CREATE: per-thread dirs */
	/* The start line: the threads wait there until the timer is set. */
	pthread_mutex_t start_lock;
	pthread_cond_t start_cond;
	unsigned int start_arrived;	/* threads at the line */
	bool start_open;
	struct thread_ctx *threads;
};

struct thread_ctx {
	struct trial *tr;
	unsigned int id;
	struct bfile **files;
	unsigned int nr_files;
	unsigned int depth;
	struct io_u *ius;
	struct io_u **free_ius;
	unsigned int nr_free;
	void *eng;			/* engine's per-thread state */
	struct hist hist;
	struct io_counts c;
	_Atomic uint64_t done_bytes;	/* measured, for the samplers */
	_Atomic uint64_t done_any;	/* any completion, for progress */
	uint64_t finish_ns;
	int err;			/* first error (negative errno) */
	char err_what[64];
	uint64_t rng;
	uint64_t *seq;			/* per file: next sequential offset */
	uint64_t seq_lo, seq_hi;	/* sequential region of this thread */
	unsigned int next_file;
	uint64_t *sync_lo, *sync_hi;	/* per file: range since last sync */
	unsigned int writes_since_sfr, writes_since_fsync;
	uint64_t created;		/* RW_CREATE: files made */
	char dir[PATH_MAX];
};

struct engine_ops {
	const char *name;
	/* NULL: always usable. Else false (and *why set) where this build
	 * or the library it runs on cannot serve the engine. */
	bool (*available)(const char **why);
	int (*mode_init)(struct trial *tr);
	void (*mode_exit)(struct trial *tr);
	int (*open_file)(struct trial *tr, struct bfile *f);
	int (*close_file)(struct trial *tr, struct bfile *f);
	int (*thread_init)(struct thread_ctx *tc);
	void (*thread_exit)(struct thread_ctx *tc);
	int (*queue)(struct thread_ctx *tc, struct io_u *u);
	int (*reap)(struct thread_ctx *tc, unsigned int min,
		    struct io_u **done, unsigned int max);
	/* flags: SYNC_FILE_RANGE_* of sync_file_range(2) */
	int (*sync_range)(struct thread_ctx *tc, struct bfile *f, uint64_t off,
			  uint64_t len, unsigned int flags);
	int (*fsync)(struct thread_ctx *tc, struct bfile *f);
	/* Synchronous read for --pre_read; returns bytes or -errno. */
	long (*read_file)(struct trial *tr, struct bfile *f, void *buf,
			  size_t len, uint64_t off);
	/* RW_CREATE: create path, write len bytes, close. */
	int (*create_file)(struct thread_ctx *tc, const char *path,
			   const void *buf, size_t len);
};

extern const struct engine_ops engine_kernel_psync;
extern const struct engine_ops engine_kernel_libaio;	/* if built */
extern const struct engine_ops engine_kernel_uring;	/* if built */
extern const struct engine_ops engine_wtio_sync;
extern const struct engine_ops engine_wtio_queue;
extern const struct engine_ops engine_null;

/* Shared by the kernel engines (engine_kernel_psync.c). */
int kernel_open_file(struct trial *tr, struct bfile *f);
int kernel_close_file(struct trial *tr, struct bfile *f);
int kernel_sync_range(struct thread_ctx *tc, struct bfile *f, uint64_t off,
		      uint64_t len, unsigned int flags);
int kernel_fsync(struct thread_ctx *tc, struct bfile *f);
long kernel_read_file(struct trial *tr, struct bfile *f, void *buf,
		      size_t len, uint64_t off);
int kernel_create_file(struct thread_ctx *tc, const char *path,
		       const void *buf, size_t len);

/*
 * The engine for a mode at this job's iodepth and --ioengine, or NULL
 * with a reason (e.g. "wtio_queue_* not in this libwtio").
 */
const struct engine_ops *engine_pick(const struct mode_def *m,
				     const struct job_opts *job,
				     const char **why);

#endif
