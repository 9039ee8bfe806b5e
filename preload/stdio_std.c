/* SPDX-License-Identifier: MIT */
/*
 * stdio_std.c - libc's own streams (stdin, stdout and every FILE libc
 * made on a descriptor) through the shim, so that a served file may sit
 * on descriptor 0 or 1: a program that dup2()s its file there (dd, a
 * shell's "exec >file" or "builtin > file") writes through stdio, and
 * glibc's stdio calls its internal read/write/lseek/close/fstat, which no
 * interposer reaches. Those five calls are the entries of glibc's stream
 * jump tables (_IO_file_jumps, _IO_wfile_jumps); each entry that holds
 * the exported function of that name is pointed here, where a served
 * descriptor goes to the shim's call and any other to libc's function as
 * before. Found by value, not by layout: a libc whose tables do not
 * hold exactly those functions is left alone, and 0 and 1 are then
 * never served (open.c passes the file through, as before).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"
#include "stdio_std.h"

typedef ssize_t (*io_read_fn)(FILE *, void *, ssize_t);
typedef ssize_t (*io_write_fn)(FILE *, const void *, ssize_t);
typedef off64_t (*io_seek_fn)(FILE *, off64_t, int);
typedef int (*io_close_fn)(FILE *);
typedef int (*io_stat_fn)(FILE *, void *);

static io_read_fn libc_read;
static io_write_fn libc_write;
static io_seek_fn libc_seek;
static io_close_fn libc_close;
static io_stat_fn libc_stat;

/* Words of a jump table looked through: glibc's has 21. */
#define JUMPS_WORDS 32

static ssize_t std_read(FILE *fp, void *buf, ssize_t size)
{
	if (!fd_is_served(fp->_fileno))
		return libc_read(fp, buf, size);
	return read(fp->_fileno, buf, (size_t)size);
}

/* glibc's _IO_new_file_write: all of it, or the error flag; the
 * stream's idea of its offset moves by what was written. */
static ssize_t std_write(FILE *fp, const void *data, ssize_t n)
{
	ssize_t left = n;

	if (!fd_is_served(fp->_fileno))
		return libc_write(fp, data, n);
	while (left > 0) {
		ssize_t r = write(fp->_fileno, data, (size_t)left);

		if (r < 0) {
			fp->_flags |= _IO_ERR_SEEN;
			break;
		}
		left -= r;
		data = (const char *)data + r;
	}
	n -= left;
	if (fp->_offset >= 0)
		fp->_offset += n;
	return n;
}

static off64_t std_seek(FILE *fp, off64_t off, int whence)
{
	if (!fd_is_served(fp->_fileno))
		return libc_seek(fp, off, whence);
	return lseek(fp->_fileno, off, whence);
}

static int std_close(FILE *fp)
{
	if (!fd_is_served(fp->_fileno))
		return libc_close(fp);
	return close(fp->_fileno);
}

static int std_stat(FILE *fp, void *st)
{
	if (!fd_is_served(fp->_fileno))
		return libc_stat(fp, st);
	return fstat(fp->_fileno, st);
}

struct entry {
	const char *name;
	void **orig;
	void *mine;
};

/* The slot of table that holds fn, when exactly one does. */
static void **jumps_slot(void **table, void *fn)
{
	void **slot = NULL;
	int i;

	for (i = 0; i < JUMPS_WORDS; i++)
		if (table[i] == fn) {
			if (slot)
				return NULL;
			slot = &table[i];
		}
	return slot;
}

/* Point the slots of table at ours; false (nothing changed) unless
 * every one was found. */
static bool jumps_hook(void **table, const struct entry *e, int n)
{
	long psz = sysconf(_SC_PAGESIZE);
	void **slot[8];
	uintptr_t lo, hi;
	int i;

	for (i = 0; i < n; i++) {
		slot[i] = jumps_slot(table, *e[i].orig);
		if (!slot[i])
			return false;
	}
	if (psz <= 0)
		return false;
	lo = (uintptr_t)table & ~((uintptr_t)psz - 1);
	hi = ((uintptr_t)(table + JUMPS_WORDS) + (uintptr_t)psz - 1) &
	     ~((uintptr_t)psz - 1);
	/* The tables are read-only after relocation (RELRO). */
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE))
		return false;
	for (i = 0; i < n; i++)
		__atomic_store_n(slot[i], e[i].mine, __ATOMIC_RELEASE);
	mprotect((void *)lo, hi - lo, PROT_READ);
	return true;
}

static bool hooked;

static void std_hook_once(void)
{
	const struct entry e[] = {
		{ "_IO_file_read", (void **)&libc_read, (void *)std_read },
		{ "_IO_file_write", (void **)&libc_write, (void *)std_write },
		{ "_IO_file_seek", (void **)&libc_seek, (void *)std_seek },
		{ "_IO_file_close", (void **)&libc_close, (void *)std_close },
		{ "_IO_file_stat", (void **)&libc_stat, (void *)std_stat },
	};
	int n = (int)(sizeof(e) / sizeof(e[0])), i;
	void **narrow = dlsym(RTLD_DEFAULT, "_IO_file_jumps");
	void **wide = dlsym(RTLD_DEFAULT, "_IO_wfile_jumps");

	for (i = 0; i < n; i++) {
		*e[i].orig = dlsym(RTLD_DEFAULT, e[i].name);
		if (!*e[i].orig)
			return;
	}
	if (!narrow || !wide)
		return;
	/* Both, or neither: a wide stream on a served descriptor would
	 * still go past the shim. Checked before either changes. */
	for (i = 0; i < n; i++)
		if (!jumps_slot(narrow, *e[i].orig) ||
		    !jumps_slot(wide, *e[i].orig))
			return;
	if (!jumps_hook(narrow, e, n))
		return;
	if (!jumps_hook(wide, e, n)) {
		/* Cannot happen once the slots were found, but for a refused
		 * mprotect: put the narrow table back. */
		const struct entry back[] = {
			{ NULL, (void **)&e[0].mine, *e[0].orig },
			{ NULL, (void **)&e[1].mine, *e[1].orig },
			{ NULL, (void **)&e[2].mine, *e[2].orig },
			{ NULL, (void **)&e[3].mine, *e[3].orig },
			{ NULL, (void **)&e[4].mine, *e[4].orig },
		};
		jumps_hook(narrow, back, n);
		return;
	}
	hooked = true;
	shim_debug("libc's stdio goes through the shim: descriptors 0 and 1 may be served");
}

bool shim_std_hooked(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, std_hook_once);
	return hooked;
}
