/* SPDX-License-Identifier: MIT */
/*
 * sys.h - the library's own system calls, made through one table.
 *
 * Every libc function libwtio calls that libwtio-preload.so also defines
 * (the shim interposes it for the program) is called through wtio_sys_tab,
 * by the wtio_sys_* names below, never by its libc name. Standalone, the
 * table holds libc's (and liburing's) functions. The shim links the
 * library's static archive into itself, so a libc name called from the
 * library would bind to the shim's own interposer of that name; instead,
 * before it creates any context, the shim installs the next definitions
 * (dlsym(RTLD_NEXT), i.e. libc's) with wtio_sys_set, and its own open and
 * close for the two calls whose meaning it must see:
 *   - open: the file the shim serves is opened once, by the program; the
 *     library's open of it gets a dup of the program's description;
 *   - close: a descriptor of a file the program holds POSIX record locks
 *     on is kept open (closing any descriptor of it would drop them).
 * Neither side depends on symbol interposition inside one .so: the
 * library's calls never reach the shim's interposers, and the shim's
 * interposers see only the program's calls (docs/SHIM.md).
 *
 * tests/sys-calls.sh fails when the static archive calls a function the
 * shim defines by its own name: add the function to WTIO_SYS_CALLS and a
 * wtio_sys_ wrapper below, and call that.
 *
 * Internal: nothing here is exported from libwtio.so.
 */
#ifndef WTIO_SYS_H
#define WTIO_SYS_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "wtio_config.h"

struct io_uring;
struct io_uring_params;

/* X(return type, name, parameters): libc's prototypes, so that the default
 * table is libc's functions themselves. */
#define WTIO_SYS_CALLS_LIBC(X)						\
	X(int, open, (const char *, int, ...))				\
	X(int, close, (int))						\
	X(int, dup3, (int, int, int))					\
	X(int, fcntl, (int, int, ...))					\
	X(int, fstat, (int, struct stat *))				\
	X(off_t, lseek, (int, off_t, int))				\
	X(int, ftruncate, (int, off_t))					\
	X(int, fallocate, (int, int, off_t, off_t))			\
	X(int, fsync, (int))						\
	X(int, fdatasync, (int))					\
	X(ssize_t, read, (int, void *, size_t))				\
	X(ssize_t, write, (int, const void *, size_t))			\
	X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int)) \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int)) \
	X(int, ioctl, (int, unsigned long, ...))			\
	X(void *, mmap, (void *, size_t, int, int, int, off_t))		\
	X(long, syscall, (long, ...))

/* liburing's ring setup: the shim interposes it to see the program's
 * rings (which make it pass every file through). Not io_uring_queue_init:
 * liburing's calls io_uring_queue_init_params through its PLT, which
 * inside the shim is the interposer; call this one with zeroed params. */
#if WTIO_HAVE_IO_URING
#define WTIO_SYS_CALLS_URING(X)						\
	X(int, io_uring_queue_init_params,				\
	  (unsigned, struct io_uring *, struct io_uring_params *))
#else
#define WTIO_SYS_CALLS_URING(X)
/* At the start of a thread of wtio's (flusher, completion): a write-back
 * past RLIMIT_FSIZE fails with EFBIG, an I/O error as any, instead of
 * the kernel's SIGXFSZ killing the process for data it was told was
 * written (fsize_limit.c checks the callers). */
void wtio_sys_block_xfsz(void);

#endif

#define WTIO_SYS_CALLS(X) WTIO_SYS_CALLS_LIBC(X) WTIO_SYS_CALLS_URING(X)

struct wtio_sys {
#define WTIO_SYS_FIELD(ret, name, params) ret (*name) params;
	WTIO_SYS_CALLS(WTIO_SYS_FIELD)
#undef WTIO_SYS_FIELD
};

extern struct wtio_sys wtio_sys_tab;

/*
 * Replace the table (every entry set: -EINVAL and nothing changed if one
 * is NULL). Only before the first context is created: the library reads
 * the table without synchronisation, and threads it starts later see the
 * new one through pthread_create.
 */
int wtio_sys_set(const struct wtio_sys *table);

#define wtio_sys_open(...)	(wtio_sys_tab.open(__VA_ARGS__))
#define wtio_sys_close(...)	(wtio_sys_tab.close(__VA_ARGS__))
#define wtio_sys_dup3(...)	(wtio_sys_tab.dup3(__VA_ARGS__))
#define wtio_sys_fcntl(...)	(wtio_sys_tab.fcntl(__VA_ARGS__))
#define wtio_sys_fstat(...)	(wtio_sys_tab.fstat(__VA_ARGS__))
#define wtio_sys_lseek(...)	(wtio_sys_tab.lseek(__VA_ARGS__))
#define wtio_sys_ftruncate(...)	(wtio_sys_tab.ftruncate(__VA_ARGS__))
#define wtio_sys_fallocate(...)	(wtio_sys_tab.fallocate(__VA_ARGS__))
#define wtio_sys_fsync(...)	(wtio_sys_tab.fsync(__VA_ARGS__))
#define wtio_sys_fdatasync(...)	(wtio_sys_tab.fdatasync(__VA_ARGS__))
#define wtio_sys_read(...)	(wtio_sys_tab.read(__VA_ARGS__))
#define wtio_sys_write(...)	(wtio_sys_tab.write(__VA_ARGS__))
#define wtio_sys_preadv2(...)	(wtio_sys_tab.preadv2(__VA_ARGS__))
#define wtio_sys_pwritev2(...)	(wtio_sys_tab.pwritev2(__VA_ARGS__))
#define wtio_sys_ioctl(...)	(wtio_sys_tab.ioctl(__VA_ARGS__))
#define wtio_sys_mmap(...)	(wtio_sys_tab.mmap(__VA_ARGS__))
#define wtio_sys_syscall(...)	(wtio_sys_tab.syscall(__VA_ARGS__))
#define wtio_sys_io_uring_queue_init_params(...) \
	(wtio_sys_tab.io_uring_queue_init_params(__VA_ARGS__))

/* At the start of a thread of wtio's (flusher, completion): a write-back
 * past RLIMIT_FSIZE fails with EFBIG, an I/O error as any, instead of
 * the kernel's SIGXFSZ killing the process for data it was told was
 * written (fsize_limit.c checks the callers). */
void wtio_sys_block_xfsz(void);

#endif
