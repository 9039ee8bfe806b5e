/* SPDX-License-Identifier: MIT */
/*
 * real.c - find the next definition (libc's) of every interposed function,
 * once, thread-safely, with dlsym(RTLD_NEXT).
 */
#include <dlfcn.h>
#include <pthread.h>

#include "shim.h"

struct real_fns real;
__thread int shim_busy;

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

#define R(name) real.name = (__typeof__(real.name))dlsym(RTLD_NEXT, #name)

static void resolve(void)
{
	R(open); R(openat); R(close);
	R(read); R(write); R(pread); R(pwrite);
	R(readv); R(writev); R(preadv); R(pwritev); R(preadv2); R(pwritev2);
	R(lseek); R(fsync); R(fdatasync); R(sync_file_range); R(syncfs);
	R(sync); R(ftruncate); R(truncate); R(fallocate); R(posix_fallocate);
	R(copy_file_range); R(sendfile); R(splice);
	R(fstat); R(stat); R(lstat); R(fstatat); R(statx);
	R(dup); R(dup2); R(dup3); R(fcntl); R(mmap);
	R(fopen); R(fdopen); R(freopen);
	R(__xstat); R(__lxstat); R(__fxstat); R(__fxstatat);
}

void shim_resolve(void)
{
	pthread_once(&resolve_once, resolve);
}
