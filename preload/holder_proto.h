/* SPDX-License-Identifier: MIT */
/*
 * holder_proto.h - the wire protocol between the processes of a program run
 * with `wtio-run --shared` (the clients: libwtio-preload.so) and the cache
 * holder (wtio-run itself, staying alive), which owns the one wtio cache of
 * the whole program. docs/DESIGN.md, "One cache per program".
 *
 * Why a holder that does the I/O, not a cache mapped into every process:
 * the library's cache state (folios, inodes, locks, rings, flushers) stays
 * in one address space, unchanged and already proven; a client that dies
 * (SIGKILL, in the middle of a call) can hold no cache lock and leave no
 * half-copied folio; the holder's one write lease per file keeps processes
 * outside the program coherent exactly as today. The price is one round
 * trip and one extra copy per call.
 *
 * Transport: a SOCK_SEQPACKET unix socket, one connection per client
 * thread that uses served files (a thread's requests are synchronous: one
 * request, one reply). Each connection has a data buffer shared with the
 * holder: a memfd the client creates and sends with HOP_HELLO (and again,
 * larger, with HOP_BUFFER when a call needs more). Write data goes in the
 * buffer before the request; read data comes back in it. Descriptors travel
 * as SCM_RIGHTS. The holder learns the client's pid from SO_PEERCRED, and
 * each request's sender from SCM_CREDENTIALS, never from the message.
 *
 * One served file has ONE open file description in the whole system: the
 * holder's (O_RDWR|O_DIRECT, write-leased against every other process, as
 * the per-process shim does). Every open of it by the program gets a dup of
 * that description (SCM_RIGHTS): the program's descriptor is real (fstat,
 * fcntl locks, fchmod work), but positions, the program's flags and the
 * data live in the holder's "OFD" objects, one per program open, shared by
 * dup and fork as the kernel shares a description.
 *
 * The holder opens with its own credentials, so it serves an open only
 * to a process whose credentials are the holder's at that moment: it
 * learns the sender of each request from the kernel (SO_PASSCRED:
 * SCM_CREDENTIALS), never from the message, and reads its credentials
 * from /proc (holder/creds.c).
 */
#ifndef WTIO_HOLDER_PROTO_H
#define WTIO_HOLDER_PROTO_H

#include <stdatomic.h>
#include <stdint.h>

#define HOLDER_PROTO_VERSION	1
/* Set by wtio-run --shared in the program's environment: the holder's
 * socket, an abstract unix address written "@name". */
#define HOLDER_ENV		"WTIO_HOLDER"
/* First data buffer of a connection; a client may send a larger one. */
#define HOLDER_BUF_MIN		(1u << 20)
#define HOLDER_BUF_MAX		(64u << 20)	/* larger calls: see HOP_READ */

enum holder_op {
	/* First message of every connection. arg[0] = HOLDER_PROTO_VERSION,
	 * arg[1] = buffer size, arg[2] = HELLO_* flags, arg[3] = fork token
	 * (HELLO_CLAIM); SCM_RIGHTS: the buffer memfd. Reply: 0 or -errno
	 * (-EPROTO on a version mismatch). */
	HOP_HELLO = 1,
	/* Replace the connection's buffer. arg[0] = size; SCM_RIGHTS: memfd. */
	HOP_BUFFER,
	/* Open. Buffer: the path, NUL-terminated. arg[0] = the program's open
	 * flags, arg[1] = mode & ~umask, arg[2] = 1 if a dirfd is attached
	 * (SCM_RIGHTS; else the path is absolute). Reply: status
	 * HOLDER_SERVED (ofd, block size, the description as SCM_RIGHTS),
	 * HOLDER_NOT_SERVED (the client opens it itself, as without the
	 * holder), or -errno (the open's error: EEXIST, EACCES, ...). */
	HOP_OPEN,
	/* A descriptor of this process names ofd (dup, dup2, F_DUPFD) / no
	 * longer does (close, dup2 over it, close_range). One reference each. */
	HOP_REF,
	HOP_UNREF,
	/* Data. ofd; arg[0] = offset, or -1 for the OFD's position (used and
	 * advanced under its position lock, as f_pos); arg[1] = length (at
	 * most the buffer; a larger call is split by the client, documented:
	 * a call over HOLDER_BUF_MAX is not atomic against other writers);
	 * arg[2] = RWF_* flags of the call (shim.h values); for a write,
	 * arg[3] = the caller's RLIMIT_FSIZE + 1 (0: none; HFSIZE_ARG).
	 * Reply: bytes or -errno; for a read the bytes are at the start of
	 * the buffer; -EFBIG with val 1: past the caller's limit, which
	 * sends itself SIGXFSZ, as the kernel would. */
	HOP_READ,
	HOP_WRITE,
	/* arg[0] = offset, arg[1] = whence. Reply: new position or -errno. */
	HOP_LSEEK,
	/* Reply val = wtio's size of the file (fstat, SEEK_END). */
	HOP_SIZE,
	/* arg[0] = dev, arg[1] = ino: for stat by path. Reply: 0 and val =
	 * size if the holder serves that inode, HOLDER_NOT_SERVED if not,
	 * with val 1 when the file left the holder just now (its last close
	 * or demotion, waited for): a kernel stat taken before the request
	 * may be from the middle of its write-back, take it again. */
	HOP_SIZE_INO,
	HOP_FTRUNCATE,		/* arg[0] = length, arg[1] = limit as HOP_WRITE's */
	HOP_FSYNC,
	HOP_FDATASYNC,
	HOP_SYNC_RANGE,		/* arg[0] = offset, [1] = nbytes, [2] = flags */
	HOP_SYNCFS,		/* every served file of the program */
	HOP_FALLOCATE,		/* arg[0] = mode, [1] = offset, [2] = length */
	/* The program's F_SETFL: arg[0] = new flags (O_APPEND, O_NONBLOCK,
	 * O_NOATIME, O_DIRECT); reply: 0. F_GETFL: reply val = the flags. */
	HOP_SETFL,
	HOP_GETFL,
	/* Pass the OFD's file through for every process of the program, for
	 * good: the holder writes it back (exact size), gives up the lease and
	 * gives every OFD of the file a kernel description of its own (the
	 * program's flags, positioned at the OFD's position). Reply:
	 * HOLDER_DEMOTED with that description (SCM_RIGHTS): the client dup3s
	 * it onto its descriptor and uses the kernel from then on. Any other
	 * request on a demoted OFD gets the same reply. arg[0] = reason code
	 * (HDEMOTE_*), for --debug and the stats. */
	HOP_DEMOTE,
	/* fork: before, the parent asks for a token that pins every OFD
	 * reference of the process for the child; the child's first HELLO
	 * claims it (HELLO_CLAIM). After, the parent reports arg[0] = token,
	 * arg[1] = child pid, or -errno if the fork failed (pins dropped). A
	 * token never claimed is dropped when that pid exits. */
	HOP_FORK_PREPARE,
	HOP_FORK_DONE,
	/* exec: the descriptors the new image inherits (no FD_CLOEXEC) are
	 * demoted first (HOP_DEMOTE), since the new image may run without the
	 * shim; then HOP_EXEC drops the process's other references when the
	 * new image says HELLO with HELLO_EXEC, or when the pid exits. */
	HOP_EXEC,
	/* The holder's counters (struct holder_stats in the buffer). */
	HOP_STATS,
	/* The shared position and size page (struct holder_shm): the reply
	 * carries a descriptor of it (a memfd) to map MAP_SHARED, read-write;
	 * -ENOSYS when the holder has none. */
	HOP_SHM,
};

/*
 * Replies, as the holder gives them (added with the holder; nothing above
 * changed): HOP_FORK_PREPARE: status = the token (> 0) or -errno.
 * HOP_SIZE, HOP_SIZE_INO: status 0, val = the size. HOP_GETFL: status 0,
 * val = the program's flags of the OFD (access mode, O_APPEND, O_NONBLOCK,
 * O_NOATIME, O_DIRECT, O_DSYNC, O_SYNC, and O_LARGEFILE's kernel bit, as a
 * 64-bit kernel shows it). HOP_UNREF: status 0, or the error the last
 * close of the OFD (or of the file: write-back, exact size) reported.
 * HOP_STATS: status = sizeof(struct holder_stats). HOLDER_DEMOTED: val =
 * -errno of a write-back error that the demotion's write-back hit and
 * this OFD had not seen (0: none), given once: the kernel's descriptor
 * cannot report it, so the client should fail its next fsync, fdatasync
 * or close of the descriptor with it. A memfd created with
 * MFD_ALLOW_SEALING is sealed against shrinking by the holder (F_SEAL_SHRINK),
 * so that no shrink can fault the holder's copy.
 */

/* HOP_OPEN arg[3]: the program's umask | HOPEN_UMASK (arg[1] is then the
 * mode as the program asked it: the kernel applies the umask, or not,
 * where the directory has a default ACL). 0: arg[1] is already masked. */
#define HOPEN_UMASK	(1 << 12)

/* HOP_HELLO flags */
#define HELLO_CLAIM	1u	/* arg[3]: a fork token */
#define HELLO_EXEC	2u	/* first HELLO of a new image (same pid) */

/*
 * HOP_HELLO's reply, status 0: the holder's credentials, for the client's
 * own check before each open (a thread whose credentials differ opens
 * through the kernel without asking; the holder checks each open again
 * itself, on the sender's credentials as /proc shows them, and answers
 * HOLDER_NOT_SERVED where they differ). val = fsuid | fsgid << 32, val2 =
 * the effective capabilities, val3 = holder_groups_hash() of the
 * supplementary groups | HELLO_CREDS. val3 without HELLO_CREDS: nothing
 * reported (the holder's check alone).
 */
#define HELLO_CREDS		1ull
#define HOLDER_GROUPS_REPORTED	256	/* more groups: not reported */

/* FNV-1a of the groups in the kernel's order (getgroups(2) and
 * /proc/PID/status give the same, sorted), its low bit left for
 * HELLO_CREDS. */
static inline uint64_t holder_groups_hash(const uint32_t *g, int n)
{
	uint64_t h = 14695981039346656037ull;
	int i, b;

	for (i = 0; i < n; i++)
		for (b = 0; b < 32; b += 8) {
			h ^= (g[i] >> b) & 0xff;
			h *= 1099511628211ull;
		}
	h ^= (uint64_t)n;
	h *= 1099511628211ull;
	return h & ~HELLO_CREDS;
}

/* Reply statuses other than >= 0 results and -errno. */
#define HOLDER_SERVED		(1L << 40)
#define HOLDER_NOT_SERVED	(1L << 41)
#define HOLDER_DEMOTED		(1L << 42)

enum holder_demote_reason {
	HDEMOTE_PROGRAM = 0,	/* asked by the client: mmap, ioctl, ... */
	HDEMOTE_EXEC,		/* inherited by an exec'd image */
	HDEMOTE_LOCK,		/* flock / OFD lock: per-description state */
	HDEMOTE_LEASE,		/* another process opened or truncated it */
};

struct holder_req {
	uint32_t op;		/* enum holder_op */
	uint32_t pad;
	uint64_t ofd;		/* the OFD id (HOLDER_SERVED's val) */
	int64_t arg[4];
};

struct holder_reply {
	int64_t status;		/* >= 0 result, -errno, or HOLDER_* */
	int64_t val;		/* HOLDER_SERVED: ofd id; HOP_SIZE*: size */
	int64_t val2;		/* HOLDER_SERVED: wtio block size */
	int64_t val3;		/* HOP_HELLO: HELLO_CREDS */
};

/* HOP_STATS: what the tests check ("every relation file served"). Also
 * written as one line per counter to $WTIO_HOLDER_STATS when the holder
 * exits, if that is set: "name value", the field names below, demoted[]
 * as demoted_program, demoted_exec, demoted_lock, demoted_lease and their
 * sum as demoted. */
struct holder_stats {
	uint64_t clients;		/* processes that said HELLO */
	uint64_t opens_served;
	uint64_t opens_not_served;	/* and why: */
	uint64_t not_served_elsewhere;	/* open outside the program */
	uint64_t not_served_other;	/* not regular, no O_DIRECT, ... */
					/* (not_served_nofds, _creds: at the end) */
	uint64_t demoted[4];		/* by holder_demote_reason */
	uint64_t reads, writes;
	uint64_t bytes_read, bytes_written;
	uint64_t syncs;
	uint64_t clients_died;		/* exited or killed holding OFDs */
	uint64_t dirty_lost_bytes;	/* write-back errors at exit */
	uint64_t seeks;			/* HOP_LSEEK asked (not answered
					 * from the shared page) */
	uint64_t sizes;			/* HOP_SIZE asked (fstat), the same */
	uint64_t not_served_nofds;	/* the holder short of descriptors
					 * (counted in not_served_other too) */
	uint64_t not_served_creds;	/* open by a process whose
					 * credentials are not the holder's */
};

/*
 * The shared position and size page (HOP_SHM): what lets a client answer
 * lseek(SEEK_SET, SEEK_END, SEEK_CUR after one of those) without a round
 * trip; PostgreSQL asks a relation's size with lseek(SEEK_END) about ten
 * times per transaction. The holder alone writes sizes and ids; clients
 * write only positions, by compare-and-swap.
 *
 * OFD id n has slot n % HOLDER_SHM_OFDS, owned by it only if the slot's id
 * is n (a slot in use by an older OFD is not taken: that OFD's calls go to
 * the holder). The slot's pos word is (gen << 48) | v, gen = (n /
 * HOLDER_SHM_OFDS) & 0xffff: v = 0 nothing pending, v = p + 1 the position
 * is p (set by a client; the holder takes it, under the OFD's pos_lock,
 * before it uses the position), v = HOLDER_SHM_CLOSED the slot is not for
 * local seeks (demoted, being closed: ask the holder). A client's CAS from
 * the word it checked (gen and id its own, not CLOSED) fails if the slot
 * moved on meanwhile, so a position never lands in another OFD's slot.
 * ino is the slot of the OFD's file in size[]: the size as wtio has it,
 * published by the holder before it answers any call that may move it,
 * or -1 (unknown: ask the holder). wtio-run makes the page before it
 * starts the holder, so that it can mark it dead when the holder dies.
 */
#define HOLDER_SHM_OFDS		16384u
#define HOLDER_SHM_INOS		16384u
#define HOLDER_SHM_MAGIC	0x77746d73686d3031ull	/* "wtmshm01" */
#define HOLDER_SHM_CLOSED	((1ull << 48) - 1)
#define HOLDER_SHM_POS_MAX	((int64_t)HOLDER_SHM_CLOSED - 2)
#define HOLDER_SHM_GEN(id)	(((id) / HOLDER_SHM_OFDS) & 0xffff)

struct holder_shm_ofd {
	_Atomic uint64_t id;
	_Atomic uint64_t pos;
	_Atomic uint32_t ino;
	uint32_t pad;
};

struct holder_shm {
	uint64_t magic;
	/* set by wtio-run when the holder is gone: nothing is answered from
	 * the page any more (every call is EIO, as the holder's death says) */
	_Atomic uint64_t dead;
	struct holder_shm_ofd ofd[HOLDER_SHM_OFDS];
	_Atomic int64_t size[HOLDER_SHM_INOS];
};

#endif
