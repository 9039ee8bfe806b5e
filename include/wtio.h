/* SPDX-License-Identifier: MIT */
/*
 * wtio.h - a user-space page cache over O_DIRECT with the kernel's newest
 * buffered I/O modes: write-back, write-through, non-serialized writes,
 * drop-behind, stripe-aligned writeback and untorn writes.
 *
 * Conventions (liburing's):
 *  - Every handle is opaque.
 *  - Every call that can fail returns a negative errno value on failure
 *    (-EINVAL, -EIO, ...). wtio never reports an error through errno.
 *  - A call that fails because of bad arguments changes nothing.
 *  - All calls are thread safe; a struct wtio_file may be used by many
 *    threads at once.
 *  - A context belongs to the process that created it. In a child of
 *    fork() every call on an inherited context, its files and its queues
 *    returns -ECHILD at once and touches nothing (wtio_close and
 *    wtio_ctx_destroy too: the child leaves them; its threads, rings,
 *    AIO contexts and cache are the parent's); make a new context there.
 */
#ifndef WTIO_H
#define WTIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WTIO_VERSION_MAJOR 0
#define WTIO_VERSION_MINOR 3

/* Version of the library actually loaded at run time. */
int wtio_version_major(void);
int wtio_version_minor(void);
/*
 * True when the loaded library provides at least the API of major.minor:
 * same major, minor >= the one asked for. Call it as
 * wtio_check_version(WTIO_VERSION_MAJOR, WTIO_VERSION_MINOR).
 */
bool wtio_check_version(int major, int minor);

/* A cache context: memory budget, flusher threads, I/O backend. */
struct wtio_ctx;
/* An open file served through a context's cache. */
struct wtio_file;

/* I/O backends. AUTO picks io_uring when the kernel allows it, else PSYNC. */
enum wtio_backend {
	WTIO_BACKEND_AUTO = 0,
	WTIO_BACKEND_IO_URING = 1,	/* one ring per submitting thread */
	WTIO_BACKEND_PSYNC = 2,		/* preadv2/pwritev2 */
	/* 3 was WTIO_BACKEND_FAULT until 0.1.0: the fault-injecting backend
	 * is now in the test suite's own library, not in libwtio. */
};

/*
 * Context configuration. Initialise with wtio_config_init() and change
 * what you need; a zero field means "the default" where one is noted.
 */
struct wtio_config {
	/* Cache memory budget in bytes. Default: 1/8 of physical memory,
	 * at least 64 MiB and at most 1 GiB. Must hold at least
	 * WTIO_MIN_FOLIOS folios, and be at most 2^46 bytes. */
	uint64_t cache_size;
	/* Folio size in bytes: a power of two from 4 KiB to 1 MiB.
	 * Default 4 KiB. Per-block state inside a folio is kept at the
	 * file's block size: the filesystem's block size, at least its
	 * direct I/O alignment and 512 bytes, at least folio_size / 64 and
	 * at most folio_size. */
	uint32_t folio_size;
	/* Background flusher threads, at most 64. Default 1, like the
	 * kernel's one writeback worker per device. */
	uint32_t nr_flushers;
	/* Writeback starts when dirty data exceeds this percentage of the
	 * budget. Default 10. */
	uint32_t dirty_background_ratio;
	/* Writers are throttled when dirty data exceeds this percentage of
	 * the budget. Default 20. Must be >= dirty_background_ratio and
	 * <= 90. */
	uint32_t dirty_ratio;
	/* Dirty data older than this is written back even below the
	 * background threshold. Default 30000 ms (the kernel's
	 * dirty_expire_centisecs). */
	uint32_t dirty_expire_ms;
	/* How often flushers look for expired data. Default 5000 ms. */
	uint32_t writeback_interval_ms;
	/* Largest single I/O wtio builds: a multiple of 4096, at least
	 * folio_size and at most 64 MiB. Default 1 MiB. On a striped
	 * device rounded down to whole stripes (up to one stripe when a
	 * stripe is larger). */
	uint32_t max_io_size;
	/* Largest sequential readahead window, at most cache_size / 4
	 * (-EINVAL above). Default 128 KiB, or cache_size / 4 when that is
	 * smaller. 0 means the default, and so does 128 KiB itself (what
	 * wtio_config_init sets; the two cannot be told apart): in a cache
	 * under 512 KiB it too becomes cache_size / 4 rather than -EINVAL.
	 * WTIO_CONFIG_NO_READAHEAD in flags turns readahead off whatever
	 * the value. */
	uint32_t readahead_max;
	/* One of enum wtio_backend. */
	uint32_t backend;
	/* WTIO_CONFIG_* bits. */
	uint32_t flags;
	/* Must be NULL (-EINVAL otherwise). Until 0.1.0 the fault
	 * backend's recorder ("fault"); kept as a pointer so that the fields
	 * after it stay where they were. */
	void *reserved;
	/* Stripe geometry override in bytes, for every file of the context.
	 * 0 = take it from the filesystem (XFS sunit/swidth) or the block
	 * device (sysfs minimum/optimal I/O size). stripe_unit must be a
	 * multiple of 4096 and stripe_width a multiple of stripe_unit
	 * (0: one unit; a width without a unit is -EINVAL). I/Os are
	 * aligned to the width: whole aligned stripes, or inside one. */
	uint32_t stripe_unit;
	uint32_t stripe_width;
};

#define WTIO_MIN_FOLIOS 16u
/* Do no sequential readahead. */
#define WTIO_CONFIG_NO_READAHEAD (1u << 0)
/* Do not register the cache memory as io_uring fixed buffers. */
#define WTIO_CONFIG_NO_FIXED_BUFFERS (1u << 1)
/* Ignore stripe geometry: build I/Os without cutting them at stripe
 * boundaries (to measure what the alignment is worth). */
#define WTIO_CONFIG_NO_STRIPE_ALIGN (1u << 2)
/* Let the backing file grow ahead of appending write-through writes
 * (by 1/16 of its size, 1 to 64 MiB), so that concurrent appends land
 * inside it: a filesystem serialises direct writes past its end. The
 * price: after a crash the file may end in zeros past the last write;
 * fsync and close still make its size exact. Off by default. */
#define WTIO_CONFIG_SIZE_AHEAD (1u << 3)
/* Every write of the context's files is adaptive, as if it carried
 * WTIO_ADAPTIVE (since 0.2). */
#define WTIO_CONFIG_ADAPTIVE (1u << 4)
/*
 * Keep a file's cache after its last close (since 0.2), as the kernel
 * keeps its page cache: wtio_close writes nothing back (a clean file only
 * has its on-disk size made exact). The closed file stays in the context
 * with its clean and dirty data and its backing descriptor; the flushers
 * write it back like an open file's (expired or over the background
 * threshold) and then make its size exact; another wtio_open of the same
 * file in the context finds that cache. At most half the soft
 * RLIMIT_NOFILE (16 to 65536) closed files are kept: past it the oldest
 * (a clean one among the oldest first) is written back and leaves, and
 * so does the oldest when an open fails with EMFILE or ENFILE.
 * wtio_ctx_destroy writes every kept file back and makes its size exact
 * (no fsync). A write-back error after the last close is reported once,
 * the kernel's errseq way: by the fsync or close of the next handle
 * opened on the file in the context, if any, else by wtio_ctx_destroy's
 * return value (the first such error; wtio_stats' writeback_errors
 * counts every failed I/O). The descriptor kept open holds the file's
 * inode number: after an unlink a new file at the path is another file,
 * never served the old cache; the unlinked file's space is freed when it
 * leaves the cache. Not for files that something outside the context
 * changes while they are closed (another process, truncate(2) by path):
 * the kept cache is not checked against the disk at a reopen.
 */
#define WTIO_CONFIG_KEEP_CLOSED (1u << 5)
/*
 * Submit all the I/O that a thread other than its submitter completes
 * through Linux AIO (io_submit/io_getevents) instead of io_uring: started
 * writeback and readahead as well as the queues' write-through writes,
 * which go over AIO by default (since 0.2; WTIO_CONFIG_URING_CHANNELS
 * keeps them on io_uring).
 * An io_uring ring completes a direct write by task work of the thread
 * that submitted it, interrupting whatever that thread does next; AIO
 * completes it where the device does, and wakes the completion thread.
 * Same semantics either way: a write is acknowledged when on disk,
 * RWF_DSYNC goes with it, errors and short counts are reported as with
 * io_uring. Only with the io_uring backend; where AIO cannot be set up
 * (no kernel support, fs.aio-max-nr reached) the io_uring channels are
 * used. Each AIO channel takes from the system-wide fs.aio-max-nr (a
 * queue twice its depth, at least 64; the context's channel 256), which
 * other programs' AIO shares. The environment variable WTIO_IO_CHANNEL,
 * read when a context is created, overrides this bit and the next: "aio"
 * sets this one, "io_uring" sets the next; -EINVAL with both set.
 */
#define WTIO_CONFIG_AIO_CHANNELS (1u << 6)
/* WTIO_DONTCACHE reads of a sequential stream read ahead too (since
 * 0.2), as the kernel's RWF_DONTCACHE does: into free folios only (a
 * drop-behind stream pushes no other data out), each dropped once a
 * DONTCACHE read has copied it; what the stream did not reach leaves
 * the cache at the file's close or by eviction. Without it a DONTCACHE
 * read does no readahead. */
#define WTIO_CONFIG_DONTCACHE_READAHEAD (1u << 7)
/* Every channel over io_uring, the queues' too (since 0.2; before, the
 * default): see WTIO_CONFIG_AIO_CHANNELS. */
#define WTIO_CONFIG_URING_CHANNELS (1u << 8)

/*
 * Large folios for files that are streamed (a later 0.2; an earlier
 * library refuses the bit with -EINVAL): a file whose cache is empty
 * when a read or write of len bytes starts gets folios of the largest
 * power of two not above len (for a read, not above what it finds
 * before the end of file), at least folio_size and at most the large
 * size, 16 * folio_size (halved until at most 1 MiB and max_io_size). A
 * file keeps its folio size while any of its data is cached. All sizes
 * share the one budget (memory moves between them as the kernel's page
 * cache moves between folio orders; the budget is rounded down to whole
 * large folios), so a stream's large I/Os are not cut into 4 KiB folios,
 * a random 16 KiB writer gets 16 KiB ones and a random 4 KiB writer does
 * not pay for 64 KiB ones. Only in a
 * cache of at least 64 large folios (a smaller one keeps folio_size for
 * every file). Off by default; the environment variable
 * WTIO_LARGE_FOLIOS, read when a context is created, sets (1) or clears
 * (0) it.
 */
#define WTIO_CONFIG_LARGE_FOLIOS (1u << 9)

/* Fill cfg with the defaults. */
void wtio_config_init(struct wtio_config *cfg);

/*
 * Create a context. cfg may be NULL for the defaults. Returns 0 and sets
 * *ctxp, or -EINVAL (bad configuration, or ctxp NULL), -ENOMEM,
 * -EOPNOTSUPP (the requested backend cannot work here), -EAGAIN (a
 * flusher thread could not be started).
 */
int wtio_ctx_create(const struct wtio_config *cfg, struct wtio_ctx **ctxp);

/*
 * Destroy a context. Every file must be closed and every queue
 * (wtio_queue_create) destroyed first: -EBUSY otherwise, and nothing is
 * destroyed. -EINVAL for a NULL ctx. Under WTIO_CONFIG_KEEP_CLOSED the
 * closed files kept with their cache are written back first; the first
 * write-back error of one that no handle reported is returned (-EIO,
 * -ENOSPC, ...), and the context is destroyed all the same.
 */
int wtio_ctx_destroy(struct wtio_ctx *ctx);

/* The name of the backend a context uses ("io_uring", "psync", or a
 * test backend's), or NULL for a NULL ctx. */
const char *wtio_ctx_backend_name(const struct wtio_ctx *ctx);

/*
 * Per-call flags, also usable as a file's default mode (wtio_open()).
 */
/* Submit this write's I/O from the calling thread; return when it is done. */
#define WTIO_WRITETHROUGH	(1u << 0)
/* Data integrity for the written range (and the size, for extending
 * writes) before returning. */
#define WTIO_DSYNC		(1u << 1)
/* With WTIO_WRITETHROUGH: take the file lock shared for non-extending
 * writes. Overlapping concurrent writes may then mix across folios.
 * Without WTIO_WRITETHROUGH or WTIO_ATOMIC: -EINVAL; with WTIO_ATOMIC it
 * has no effect. */
#define WTIO_NOSERIAL		(1u << 2)
/* Drop the folios this call used as soon as their I/O (or the read
 * copy) completes. */
#define WTIO_DONTCACHE		(1u << 3)
/* Untorn write: power-of-two length, naturally aligned, within the
 * file's atomic write unit limits; one RWF_ATOMIC direct I/O. */
#define WTIO_ATOMIC		(1u << 4)
/* Return -EAGAIN instead of blocking. */
#define WTIO_NOWAIT		(1u << 5)
/* Adaptive (since 0.2): written back while the context's dirty data is
 * under the background threshold; once a write-back writer would be
 * throttled, written through from the caller's thread instead (as with
 * WTIO_WRITETHROUGH: its I/O error is this call's), for as long as a
 * throttled writer would sleep (until dirty data is back where the
 * throttle lets its sleepers go, a little under the limit). The same
 * guarantees as
 * write-back; with WTIO_WRITETHROUGH or WTIO_ATOMIC it has no effect;
 * with WTIO_NOSERIAL (and neither of those) -EINVAL. */
#define WTIO_ADAPTIVE		(1u << 6)
#define WTIO_ALL_FLAGS		((1u << 7) - 1)

/*
 * Open path through ctx. oflags: O_RDONLY, O_WRONLY or O_RDWR, plus
 * O_CREAT, O_EXCL, O_TRUNC (not with O_RDONLY), O_DSYNC, O_SYNC,
 * O_NOATIME, and O_CLOEXEC, O_DIRECT, O_LARGEFILE (all three implied).
 * O_DSYNC/O_SYNC make every write behave as WTIO_DSYNC. mode is used with
 * O_CREAT. default_flags is OR'd into the flags of every call on the
 * returned handle (e.g. WTIO_WRITETHROUGH for a write-through file).
 *
 * Two opens of the same file in one context share one cache of it.
 * Returns 0 and sets *filep, or a negative errno: those of open(2) on the
 * path, -EINVAL for unknown oflags or flags (or a NULL argument, or a
 * path that is not a regular file), -EISDIR for a directory, -ENOENT for
 * an empty path, -ENOMEM, -EOPNOTSUPP for a flag this build does not
 * implement, or when the filesystem refuses O_DIRECT or its direct I/O
 * alignment is larger than the folio size, -EFBIG for a file already
 * larger than wtio keeps (wtio_file_max_size: XFS and tmpfs pass 2^62).
 */
int wtio_open(struct wtio_ctx *ctx, const char *path, int oflags,
	      mode_t mode, unsigned int default_flags,
	      struct wtio_file **filep);

/*
 * Write back the file's dirty data, make the on-disk size exact and close
 * (a read-only handle only closes). Returns 0, or the first writeback
 * error this handle had not yet seen (the handle is closed either way),
 * or -EBADF for a NULL or closed handle. Under WTIO_CONFIG_KEEP_CLOSED
 * the last close writes nothing back (see there).
 */
int wtio_close(struct wtio_file *file);

/*
 * Read up to len bytes at off. Returns the number of bytes read (0 at or
 * beyond end of file), or a negative errno. flags: WTIO_DONTCACHE,
 * WTIO_NOWAIT (others: -EINVAL). -EBADF on a write-only handle.
 */
ssize_t wtio_pread(struct wtio_file *file, void *buf, size_t len, off_t off,
		   unsigned int flags);
ssize_t wtio_preadv(struct wtio_file *file, const struct iovec *iov,
		    int iovcnt, off_t off, unsigned int flags);

/*
 * Write len bytes at off. Any offset and length; partial blocks are
 * read-modify-written through the cache. Returns the number of bytes
 * written or a negative errno. A short count means an error (or the
 * filesystem's size limit) stopped the write after that many bytes.
 * -EBADF on a read-only handle; -EINVAL for a negative offset or an end
 * past the largest off_t; -EFBIG at or past the filesystem's largest
 * file size. A write-back write's later I/O errors are reported by
 * fsync and close.
 */
ssize_t wtio_pwrite(struct wtio_file *file, const void *buf, size_t len,
		    off_t off, unsigned int flags);
ssize_t wtio_pwritev(struct wtio_file *file, const struct iovec *iov,
		     int iovcnt, off_t off, unsigned int flags);

/*
 * Write back and wait for all dirty data of the file, make the size exact,
 * then fsync(2) (or fdatasync(2)) the backing file. Returns 0, or the
 * first error since this handle last reported one (each error is reported
 * once per handle, like the kernel's errseq).
 */
int wtio_fsync(struct wtio_file *file);
int wtio_fdatasync(struct wtio_file *file);

/* sync_file_range(2) semantics on wtio's cache. */
#define WTIO_SYNC_RANGE_WAIT_BEFORE	(1u << 0)
#define WTIO_SYNC_RANGE_WRITE		(1u << 1)
#define WTIO_SYNC_RANGE_WAIT_AFTER	(1u << 2)
/*
 * WAIT_BEFORE waits for writeback already under way in the range, WRITE
 * starts writeback of its dirty data, WAIT_AFTER waits for that to end.
 * nbytes == 0 means "to end of file". No durability (no fsync), as with
 * the system call. Returns 0 or a negative errno.
 */
int wtio_sync_range(struct wtio_file *file, off_t off, off_t nbytes,
		    unsigned int flags);

/*
 * Set the file's size. Shrinking drops cached data past the new size
 * (after waiting for I/O in flight on it); growing reads back zeros.
 * The backing file changes at once. Returns 0 or a negative errno:
 * -EINVAL for a negative length, -EBADF on a read-only handle, -EFBIG
 * past the filesystem's largest file size, or ftruncate(2)'s.
 */
int wtio_ftruncate(struct wtio_file *file, off_t length);

/* The file's size as wtio sees it (>= 0), or a negative errno. */
off_t wtio_file_size(struct wtio_file *file);

/*
 * The largest size the file may have under wtio (> 0), or a negative
 * errno: the filesystem's limit for it (s_maxbytes), at most 2^62,
 * rounded down to wtio's block size. A write at or past it is -EFBIG,
 * one crossing it is cut short there, ftruncate past it is -EFBIG; a
 * program that seeks (the shim's lseek) is refused a position past it.
 */
off_t wtio_file_max_size(struct wtio_file *file);

/* What wtio found out about a file's filesystem and device. */
struct wtio_file_info {
	uint32_t block_size;		/* wtio's per-block state unit */
	uint32_t dio_mem_align;		/* statx STATX_DIOALIGN */
	uint32_t dio_offset_align;
	uint32_t atomic_unit_min;	/* statx STATX_WRITE_ATOMIC; 0 = none */
	uint32_t atomic_unit_max;
	uint32_t stripe_unit;		/* bytes; 0 = no stripe alignment */
	uint32_t stripe_width;
	char stripe_source[16];		/* "xfs", "sysfs", "config", "none" */
};

/* Fill *info for an open file. Returns 0 or a negative errno (-EBADF,
 * -EINVAL for a NULL info). */
int wtio_file_info(struct wtio_file *file, struct wtio_file_info *info);

/*
 * Asynchronous submission (the aio path of the kernel's write-through
 * series). A queue belongs to the thread that created it: submit to it
 * and reap from it in that thread only, as with an io_uring ring.
 *
 * A write submitted with WTIO_WRITETHROUGH is copied into the cache and
 * its I/O started before submit returns, so the caller may reuse the
 * buffer at once; its completion carries the byte count or the error.
 * So is a WTIO_ADAPTIVE write that submit sends write-through. A
 * write-back write (an adaptive one included), an untorn write
 * (WTIO_ATOMIC) and a read are done before submit returns and complete
 * at once. A read's buffer must stay
 * valid until its completion is reaped.
 */
struct wtio_queue;

struct wtio_cqe {
	uint64_t user_data;	/* as given to submit */
	int64_t res;		/* bytes done, or a negative errno */
};

/* Create a queue of up to depth requests in flight (1..4096, else
 * -EINVAL). Returns 0 or a negative errno. */
int wtio_queue_create(struct wtio_ctx *ctx, unsigned int depth,
		      struct wtio_queue **queuep);
/* Wait for every I/O in flight, then free the queue (completions not
 * reaped are dropped). The context must still exist. */
int wtio_queue_destroy(struct wtio_queue *queue);

/* Submit one write or read. Returns 0 when queued (its result comes as a
 * completion), -EAGAIN when depth requests are already in flight (reap
 * first), -ENOMEM, or the errno that a synchronous call would return for
 * bad arguments (then no completion is posted). */
int wtio_queue_pwrite(struct wtio_queue *queue, struct wtio_file *file,
		      const void *buf, size_t len, off_t off,
		      unsigned int flags, uint64_t user_data);
int wtio_queue_pread(struct wtio_queue *queue, struct wtio_file *file,
		     void *buf, size_t len, off_t off, unsigned int flags,
		     uint64_t user_data);

/*
 * Reap completions into cqes (up to max), waiting until at least min are
 * available or timeout_ns passes (timeout_ns < 0: no limit), but never
 * for more than are in flight. Returns the number stored (possibly fewer
 * than min on timeout) or -EINVAL (cqes NULL with max > 0, min > max).
 */
int wtio_queue_reap(struct wtio_queue *queue, struct wtio_cqe *cqes,
		    unsigned int max, unsigned int min, int64_t timeout_ns);

/* Requests submitted and not yet reaped (0 for a NULL queue). */
unsigned int wtio_queue_inflight(const struct wtio_queue *queue);

/*
 * An eventfd that becomes readable when completions may be waiting, for
 * an event loop (poll it, then call wtio_queue_reap with min 0). Owned by
 * the queue. Returns the descriptor or a negative errno.
 */
int wtio_queue_eventfd(struct wtio_queue *queue);

/* Counters of a context, since it was created. The *_folios counts and
 * evictions are of memory, in units of the context's folio_size: with
 * WTIO_CONFIG_LARGE_FOLIOS a large folio counts its units (16 unless
 * the large size was halved to fit 1 MiB). hits and misses are
 * events, one per folio looked up whatever its size. */
struct wtio_stats {
	uint64_t hits;			/* folio lookups served from cache */
	uint64_t misses;		/* folio lookups that needed a read */
	uint64_t readahead_folios;	/* folios read ahead of need */
	uint64_t bytes_read;		/* bytes read from backing files */
	uint64_t bytes_written;		/* bytes written to backing files */
	uint64_t read_ios;		/* read I/Os submitted */
	uint64_t write_ios;		/* write I/Os submitted */
	uint64_t dirty_folios;		/* now dirty */
	uint64_t writeback_folios;	/* now under writeback */
	uint64_t cached_folios;		/* now in the cache */
	uint64_t total_folios;		/* the budget, in folios */
	uint64_t throttle_waits;	/* writes throttled by the dirty limit */
	uint64_t evictions;		/* folios evicted to make room */
	uint64_t writeback_errors;	/* failed write I/Os */
	uint64_t rmw_reads;		/* block reads for partial writes */
	uint64_t stripe_splits;		/* I/Os ended at a stripe boundary
					 * that would have gone on */
	uint64_t dropbehind_folios;	/* folios dropped by WTIO_DONTCACHE */
	uint64_t atomic_writes;		/* untorn writes completed */
	/* Since 0.2 (a program built against 0.1 gets the fields above). */
	uint64_t adaptive_writethrough;	/* adaptive writes written through */
	/* Since 0.3. Folios of data whose write-back failed (its error
	 * already recorded, reported by every handle's next fsync or
	 * close) given up to make room, when nothing else in the cache
	 * could be freed: the data is lost, as Linux loses a page whose
	 * write-back failed. Nonzero means an application that ignored a
	 * failed fsync or close lost data. */
	uint64_t failed_dropped_folios;
};

/* Fill *st with the context's counters. Returns 0, or -EINVAL for a NULL
 * argument. */
int wtio_stats(struct wtio_ctx *ctx, struct wtio_stats *st);

/* Human-readable text for a wtio error value (negative errno; a positive
 * one is taken as its negative). */
const char *wtio_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* WTIO_H */
