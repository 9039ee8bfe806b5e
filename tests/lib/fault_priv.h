/* SPDX-License-Identifier: MIT */
/*
 * fault_priv.h - the fault injector's object and record, shared by the
 * test library's files (fault.c rules and holds, record.c, backend.c,
 * replay.c).
 */
#ifndef WTIO_FAULT_PRIV_H
#define WTIO_FAULT_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "wtio_fault.h"
#include "io/ops.h"

enum fault_ev_type {
	EV_WRITE,
	EV_TRUNCATE,
	EV_FLUSH,	/* fsync/fdatasync: everything before is durable */
	EV_FUA,		/* only the write just before is durable */
};

struct fault_event {
	enum fault_ev_type type;
	dev_t dev;
	ino_t ino;
	off_t off;		/* write offset, or the new size */
	size_t len;
	void *data;		/* the bytes written */
	bool atomic;		/* issued with RWF_ATOMIC: lands all or nothing */
	uint32_t blksize;	/* the file's block: the unit a torn write keeps */
};

struct fault_rule_state {
	struct wtio_fault_rule r;
	uint64_t seen;		/* matches let through by skip */
	uint64_t faulted;
};

#define FAULT_MAX_WRITERS 64

struct wtio_fault {
	pthread_mutex_t lock;
	struct fault_rule_state *rules;
	size_t nr_rules, cap_rules;
	uint64_t injected;
	struct fault_event *ev;
	size_t nr_ev, cap_ev;
	/* A record that lost an event cannot be replayed faithfully. */
	int record_err;
	struct wtio_fault_io *trace;
	size_t nr_trace, cap_trace;
	/* Hold rules: I/Os waiting for wtio_fault_release(). */
	pthread_cond_t held_cond;
	uint64_t nr_held;
	uint64_t release_gen;	/* bumped by each release */
	/* Every hold by number (from 0, in the order they began): held
	 * now, let go by wtio_fault_release_one (with the outcome it
	 * chose), its I/O done. */
	struct fault_held *held;
	uint64_t nr_holds;
	uint8_t *hold_state;	/* HOLD_*, by number */
	size_t cap_hold_state;
	/* Contexts created now get the asynchronous mode (async.c). */
	bool async;
	/* Writes under way now, by file and thread (record.c), and how
	 * many began beside another thread's write of their file. */
	struct fault_writer {
		dev_t dev;
		ino_t ino;
		int tid;
		bool busy;
	} writers[FAULT_MAX_WRITERS];
	uint64_t write_overlaps;
};

enum { HOLD_NONE, HOLD_HELD, HOLD_GONE, HOLD_DONE };

/* One I/O held now, on its thread's stack. */
struct fault_held {
	uint64_t seq;
	bool go;		/* let go by wtio_fault_release_one */
	int outcome;		/* its outcome: -1 the rule's, 0 or errno */
	struct fault_held *next;
};

bool fault_match(struct wtio_fault *f, uint32_t op,
		 const struct wtio_io_req *req, size_t len,
		 struct wtio_fault_rule *hit);
/* A hold rule matched: wait for the next release. Returns the outcome
 * the release chose (-1: the rule's), and the hold's number in *seq. */
int fault_hold(struct wtio_fault *f, uint64_t *seq);
/* The held I/O seq is done (its result recorded). */
void fault_hold_done(struct wtio_fault *f, uint64_t seq);
/* The trace entry and the rule that faults req (false: none), in the
 * order I/Os are submitted (chan: to a channel); *lenp its length. */
bool fault_admit(struct wtio_fault *f, const struct wtio_io_req *req,
		 bool chan, struct wtio_fault_rule *hit, size_t *lenp);
/* Do req as hit says (NULL: not faulted), and record it. */
ssize_t fault_perform(struct wtio_io_backend *be,
		      const struct wtio_io_req *req,
		      const struct wtio_fault_rule *hit, size_t len);
/* Both modes' set_size: the change, then its record. */
int fault_set_size(struct wtio_io_backend *be, int fd, off_t size);
/* Record a completed I/O (writes and flushes; others are not kept). */
void fault_record_io(struct wtio_fault *f, const struct wtio_io_req *req,
		     ssize_t res);
void fault_record_size(struct wtio_fault *f, int fd, off_t size);
/* A write of req's file begins in this thread: note it, and count an
 * overlap if another thread's write of that file is under way. Returns
 * the slot to give back to fault_writer_leave (-1: not a write, or not
 * tracked). Takes the lock. */
int fault_writer_enter(struct wtio_fault *f, const struct wtio_io_req *req);
void fault_writer_leave(struct wtio_fault *f, int slot);
/* Append req, as issued, to the trace; under the lock. */
void fault_trace(struct wtio_fault *f, const struct wtio_io_req *req,
		 uint32_t op, size_t len, bool chan, bool faulted);

#endif /* WTIO_FAULT_PRIV_H */
