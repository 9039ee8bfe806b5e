/* SPDX-License-Identifier: MIT */
/*
 * wtio_fault.h - the test library's fault-injecting, write-recording I/O
 * backend, its crash replay and wtio_ctx_crash(). Not part of libwtio:
 * tests link the static test library (tests/lib) with the library's
 * static archive.
 *
 * A context created with wtio_fault_ctx_create(cfg, F, &ctx) does real
 * I/O with preadv2/pwritev2, except where one of F's rules says
 * otherwise, and F records every write, truncate and flush that completed
 * on the backing files. The recorder outlives the context, so a test can
 * "crash" (wtio_ctx_crash()), then rebuild what a disk with a volatile
 * write cache could hold after power loss (wtio_fault_replay()) and check
 * that every acknowledged byte is in it.
 */
#ifndef WTIO_FAULT_H
#define WTIO_FAULT_H

#include <stdbool.h>
#include <wtio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct wtio_fault;
struct wtio_io_ops;

/* Which I/Os a rule matches. */
#define WTIO_FAULT_READ		(1u << 0)
#define WTIO_FAULT_WRITE	(1u << 1)
#define WTIO_FAULT_FLUSH	(1u << 2)	/* fsync/fdatasync */

struct wtio_fault_rule {
	uint32_t ops;		/* WTIO_FAULT_* mask */
	uint64_t skip;		/* let this many matching I/Os through first */
	uint64_t count;		/* then fault this many (0 = every one after) */
	off_t start, end;	/* only I/Os overlapping [start, end); end 0 = no limit */
	int error;		/* positive errno to fail with (EIO, ENOSPC), or 0 */
	uint32_t short_bytes;	/* error == 0: complete only this many bytes
				 * (a short I/O; 0 = half the I/O, rounded down
				 * to 512 bytes, at least 512) */
	uint32_t delay_us;	/* delay before doing the I/O; with error 0 and
				 * short_bytes 0 a rule is a pure delay */
	uint32_t hold;		/* nonzero: the I/O waits, before it is done,
				 * until wtio_fault_release(); a test can wait
				 * for it (wtio_fault_wait_held) instead of
				 * sleeping. With error 0 and short_bytes 0 a
				 * pure hold */
};

/* A new recorder with no rules. Returns NULL on allocation failure. */
struct wtio_fault *wtio_fault_create(void);
/* Free a recorder; every context using it must be destroyed first. */
void wtio_fault_destroy(struct wtio_fault *fault);

/*
 * wtio_ctx_create() with the fault backend over recorder fault instead of
 * cfg->backend (cfg may be NULL for the defaults). Returns what
 * wtio_ctx_create() returns; -EINVAL without a recorder.
 */
int wtio_fault_ctx_create(const struct wtio_config *cfg,
			  struct wtio_fault *fault, struct wtio_ctx **ctxp);
/* The backend's ops (io/ops.h), for tests of the backend layer itself:
 * wtio_io_backend_setup(&be, &wtio_io_fault_ops, fault, ...). */
extern const struct wtio_io_ops wtio_io_fault_ops;

/* Add a rule; rules are checked in the order added. Returns 0 or -EINVAL. */
int wtio_fault_add_rule(struct wtio_fault *fault,
			const struct wtio_fault_rule *rule);
/* Remove all rules (the record stays). */
void wtio_fault_clear_rules(struct wtio_fault *fault);
/* How many I/Os the rules have faulted so far. */
uint64_t wtio_fault_injected(const struct wtio_fault *fault);

/* I/Os waiting on a hold rule now. */
uint64_t wtio_fault_held(struct wtio_fault *fault);
/* Wait until at least n I/Os are held (at once). Returns 0, or
 * -ETIMEDOUT after timeout_ms milliseconds. */
int wtio_fault_wait_held(struct wtio_fault *fault, uint64_t n,
			 unsigned int timeout_ms);
/* Let every I/O held now go on. */
void wtio_fault_release(struct wtio_fault *fault);
/*
 * Holds are numbered from 0 in the order they began. Let hold seq go on
 * alone, with an outcome: -1 what its rule says, 0 done in full, or a
 * positive errno to fail with. Returns 0, or -ENOENT when seq is not held
 * now. wtio_fault_wait_done waits until its I/O is over (its result
 * recorded; its completion may still be on its way): 0 or -ETIMEDOUT.
 * With them a test fixes the order in which held I/Os complete, and
 * which of them fail.
 */
int wtio_fault_release_one(struct wtio_fault *fault, uint64_t seq,
			   int outcome);
int wtio_fault_wait_done(struct wtio_fault *fault, uint64_t seq,
			 unsigned int timeout_ms);

/*
 * The asynchronous mode, for contexts created over fault from now on:
 * the backend then has channels and asynchronous submission
 * (WTIO_IO_CAP_CHANNELS | WTIO_IO_CAP_ASYNC) and a plug, as io_uring
 * has, so the paths built on them run over the rules and the record:
 * queues with a completion thread and a helping reap, the append plug,
 * asynchronous readahead, batched writeback submission, plugged
 * submit-and-wait. Each I/O is traced and matched against the rules in
 * submission order, then done by a pool of worker threads (a held I/O
 * keeps one), completing in any order; a plugged thread's I/O starts at
 * its next reap or unplug. WTIO_FAULT_ASYNC=1 in the environment makes
 * it the default of every new recorder.
 */
void wtio_fault_set_async(struct wtio_fault *fault, bool on);
/* That mode's ops, for tests of the backend layer itself. */
extern const struct wtio_io_ops wtio_io_fault_async_ops;

/*
 * The record. Every completed write (with its data), size change and flush
 * on any backing file, in completion order. An event's number is its
 * position in that order.
 */
uint64_t wtio_fault_nr_events(const struct wtio_fault *fault);

/*
 * Rebuild the file at path as a crash after the first nr_events recorded
 * events could have left it, into dst_fd, which must already hold the
 * file's content from before recording began (for a new file: empty).
 * Events on other files are ignored. Writes and size changes covered by a
 * later flush of this file within the prefix, and writes made durable by
 * their own RWF_DSYNC/O_DSYNC completion (FUA: only that write), are
 * applied whole, in order. Every other ("unflushed") write is, as chosen
 * by seed, applied whole, dropped, or torn: only some of its blocks (the
 * file's st_blksize, at block boundaries of the file offset) land. A write
 * issued with RWF_ATOMIC is applied whole or dropped, never torn. Later
 * unflushed writes may land without earlier ones (a reordering device);
 * a block never goes back to an older version than one that landed.
 * Unflushed size changes are applied each with probability 1/2. Seed 0:
 * everything applied whole (the disk kept everything). Returns 0 or a
 * negative errno.
 */
int wtio_fault_replay(const struct wtio_fault *fault, const char *path,
		      uint64_t nr_events, uint64_t seed, int dst_fd);

/* What one replay did, so a test can show (and insist) that it tore. */
struct wtio_fault_replay_info {
	uint64_t writes_durable;	/* flushed or FUA: applied whole */
	uint64_t writes_unflushed;	/* the rest, each one of: */
	uint64_t writes_whole;		/*   every block landed */
	uint64_t writes_dropped;	/*   no block landed */
	uint64_t writes_torn;		/*   some blocks landed, some not */
	uint64_t atomic_writes;		/* unflushed RWF_ATOMIC writes (never torn) */
	uint64_t blocks_landed, blocks_dropped;	/* of unflushed writes */
};

/* wtio_fault_replay(), and what it did in *info (if not NULL). */
int wtio_fault_replay_ex(const struct wtio_fault *fault, const char *path,
			 uint64_t nr_events, uint64_t seed, int dst_fd,
			 struct wtio_fault_replay_info *info);

/*
 * The trace: every I/O the backend was asked to do, in submission order,
 * as issued (before any rule changed it), so tests can check how wtio
 * shaped its I/O: sizes, alignment, stripe cutting, RWF_ flags.
 */
struct wtio_fault_io {
	uint32_t op;		/* WTIO_FAULT_READ, _WRITE or _FLUSH */
	int rw_flags;		/* RWF_DSYNC, RWF_ATOMIC, ... */
	int64_t off;
	uint64_t len;
	uint32_t nr_segs;	/* iovecs */
	uint64_t ino;		/* backing file's inode number */
	/* The memory the I/O moved: the lowest iov_base and the highest
	 * iov_base + iov_len (what a test needs to bound the cache's
	 * memory without trusting its counters). */
	uint64_t buf_lo, buf_hi;
	int tid;		/* the thread that submitted it (gettid) */
	bool chan;		/* submitted to a channel (asynchronous mode) */
	bool faulted;		/* a rule matched it (error, short, delay,
				 * hold) */
};

uint64_t wtio_fault_nr_ios(const struct wtio_fault *fault);
/* Copy trace entry i into *io. Returns 0, or -ERANGE past the end. */
int wtio_fault_get_io(const struct wtio_fault *fault, uint64_t i,
		      struct wtio_fault_io *io);

/*
 * Writes of one file by two threads at once: how many writes began while
 * another thread's write of the same file (device and inode) was under
 * way (between its submission and its end, delays and holds included).
 */
uint64_t wtio_fault_write_overlaps(const struct wtio_fault *fault);

/*
 * Simulate a crash of the process using ctx: wait for I/O already
 * submitted, then free the context and its files, open handles included,
 * without writing back anything dirty and without fixing sizes. Every
 * handle of ctx is invalid afterwards. Meant for the fault backend, works
 * with any.
 */
void wtio_ctx_crash(struct wtio_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* WTIO_FAULT_H */
