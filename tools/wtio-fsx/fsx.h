/* SPDX-License-Identifier: MIT */
/*
 * fsx.h - wtio-fsx: a seeded random exerciser of one file through wtio
 * (or plain POSIX I/O with --posix), checked against a shadow copy.
 */
#ifndef WTIO_FSX_H
#define WTIO_FSX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Operation types (also the names -X excludes and the final counts). */
enum fsx_op {
	OP_READ,
	OP_WRITE,		/* write-back */
	OP_WRITETHROUGH,
	OP_DSYNC,		/* write-back + DSYNC, or with write-through */
	OP_NOSERIAL,		/* write-through + NOSERIAL */
	OP_DONTCACHE,		/* any write or read with DONTCACHE */
	OP_ATOMIC,
	OP_ASYNC,		/* a batch of queued writes and reads */
	OP_TRUNCATE,
	OP_FSYNC,
	OP_SYNC_RANGE,
	OP_REOPEN,		/* close (and sometimes a new context), open */
	OP_NR
};

extern const char *const fsx_op_names[OP_NR];

struct fsx_opts {
	uint64_t nr_ops;
	uint64_t seed;
	uint64_t max_len;	/* file length */
	uint64_t max_op;	/* one op's size */
	uint32_t folio_size;
	uint64_t cache_size;	/* 0: 32 folios */
	int backend;		/* enum wtio_backend */
	bool quiet;
	bool posix;
	bool keep;		/* keep the file at the end */
	int adaptive;		/* 0, or FSX_ADAPTIVE_FILE / _CTX */
	int procs;		/* --procs: cooperating processes (1: one) */
	bool keep_closed;	/* WTIO_CONFIG_KEEP_CLOSED */
	bool large_folios;	/* WTIO_CONFIG_LARGE_FOLIOS */
	uint64_t tight;		/* --tight: at most this much free, 0: off */
	bool excluded[OP_NR];
	const char *path;
};

/* --adaptive[=file|ctx]: every write adaptive, by the handle's default
 * flags (WTIO_ADAPTIVE) or the context's (WTIO_CONFIG_ADAPTIVE). */
#define FSX_ADAPTIVE_FILE	1
#define FSX_ADAPTIVE_CTX	2

int fsx_parse_options(int argc, char **argv, struct fsx_opts *o);

/* ---- the file under test: wtio or POSIX ---- */
struct fsx_target;

struct fsx_target_ops {
	const char *name;
	int (*open)(struct fsx_target *t, bool truncate);
	int (*close)(struct fsx_target *t, bool new_ctx);
	/* iovcnt 1 when the caller wants a plain call */
	ssize_t (*pread)(struct fsx_target *t, void *buf, size_t len, off_t off,
			 unsigned flags, int nsegs);
	ssize_t (*pwrite)(struct fsx_target *t, const void *buf, size_t len,
			  off_t off, unsigned flags, int nsegs);
	int (*truncate)(struct fsx_target *t, off_t len);
	int (*fsync)(struct fsx_target *t, bool data_only);
	int (*sync_range)(struct fsx_target *t, off_t off, off_t len,
			  unsigned flags);
	off_t (*size)(struct fsx_target *t);
	/* async: submit a write or read, reap all (results into res[]) */
	int (*q_write)(struct fsx_target *t, const void *buf, size_t len,
		       off_t off, unsigned flags, uint64_t tag);
	int (*q_read)(struct fsx_target *t, void *buf, size_t len, off_t off,
		      unsigned flags, uint64_t tag);
	int (*q_reap_all)(struct fsx_target *t, uint64_t *tags, int64_t *res,
			  int max);
	/* atomic write unit limits (0: none) */
	void (*atomic_units)(struct fsx_target *t, uint32_t *min, uint32_t *max);
	void (*destroy)(struct fsx_target *t);
};

struct fsx_target {
	const struct fsx_target_ops *ops;
	const struct fsx_opts *o;
	void *priv;
};

int fsx_target_wtio(struct fsx_target *t, const struct fsx_opts *o);
/* Adaptive writes the wtio target's contexts wrote through, summed over
 * the contexts destroyed so far. */
extern uint64_t fsx_adaptive_writethrough;
int fsx_target_posix(struct fsx_target *t, const struct fsx_opts *o);

/* ---- --tight: the filesystem kept nearly full (tight.c) ---- */
/* Create the filler beside path (path.fill); 0, or -1 after a message. */
int fsx_tight_start(const char *path);
/* Grow or shrink the filler so that about want_free bytes stay free;
 * returns what is free then. */
uint64_t fsx_tight_set(uint64_t want_free);
/* Remove the filler. */
void fsx_tight_end(void);

/* ---- the log of recent operations ---- */
#define FSX_LOG_LEN 32
void fsx_log(uint64_t opnum, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fsx_log_dump(void);

/* ---- the shadow copy ---- */
struct fsx_shared;
struct fsx_shadow {
	uint8_t *data;		/* max_len bytes */
	uint64_t size;
	uint64_t cap;
	/* --procs: data and size live here, in memory shared by every
	 * process; size is copied in and out by lock/unlock */
	struct fsx_shared *sh;
};

void fsx_shadow_init(struct fsx_shadow *s, uint64_t cap);
/* --procs (procs.c): the shadow in shared memory, one lock around each
 * operation of any process; lock and unlock do nothing without it. */
void fsx_shadow_init_shared(struct fsx_shadow *s, uint64_t cap);
void fsx_shadow_lock(struct fsx_shadow *s);
void fsx_shadow_unlock(struct fsx_shadow *s);
void fsx_shadow_free(struct fsx_shadow *s);
/* Fork the other nprocs - 1 processes: returns this process's index
 * (0: the first, which waits for the others with fsx_procs_wait). */
int fsx_procs_start(int nprocs);
/* 0 when every other process passed, else 1 (the failed ones named). */
int fsx_procs_wait(void);
/* This process's index and the number of processes, for reports. */
extern int fsx_proc_index, fsx_nprocs;
void fsx_shadow_write(struct fsx_shadow *s, const void *buf, size_t len,
		      uint64_t off);
void fsx_shadow_truncate(struct fsx_shadow *s, uint64_t len);
/* The pattern a write of op opnum puts at file offset off (never 0). */
uint8_t fsx_pattern(uint64_t opnum, uint64_t off);
void fsx_fill(uint8_t *buf, size_t len, uint64_t opnum, uint64_t off);

/* ---- failure reporting (report.c) ---- */
extern uint64_t fsx_seed;
/* Print seed, op number, log and a hex diff of got vs want at file offset
 * off, then exit 1. */
void fsx_fail_diff(uint64_t opnum, const char *what, const uint8_t *got,
		   const uint8_t *want, size_t len, uint64_t off)
	__attribute__((noreturn));
void fsx_fail(uint64_t opnum, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 2, 3)));

/* Compare and fail with a diff. */
void fsx_check_bytes(uint64_t opnum, const char *what, const uint8_t *got,
		     const uint8_t *want, size_t len, uint64_t off);
/* Read the backing file with its own O_DIRECT descriptor and compare it
 * with the shadow; exact size if exact_size, else only the range
 * [off, off+len) (len 0: the whole shadow). */
void fsx_check_disk(uint64_t opnum, const char *path,
		    const struct fsx_shadow *s, bool exact_size,
		    uint64_t off, uint64_t len);

/* ---- the run (run.c) ---- */
int fsx_run(const struct fsx_opts *o, struct fsx_target *t);

#endif
