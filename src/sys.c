/* SPDX-License-Identifier: MIT */
/*
 * sys.c - the table of the library's own system calls (sys.h): libc's
 * functions unless the LD_PRELOAD shim installs its set.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys.h"

#if WTIO_HAVE_IO_URING
#include <liburing.h>
#endif

struct wtio_sys wtio_sys_tab = {
#define WTIO_SYS_DEFAULT(ret, name, params) .name = name,
	WTIO_SYS_CALLS(WTIO_SYS_DEFAULT)
#undef WTIO_SYS_DEFAULT
};

int wtio_sys_set(const struct wtio_sys *table)
{
	if (!table)
		return -EINVAL;
#define WTIO_SYS_CHECK(ret, name, params)	\
	if (!table->name)			\
		return -EINVAL;
	WTIO_SYS_CALLS(WTIO_SYS_CHECK)
#undef WTIO_SYS_CHECK
	wtio_sys_tab = *table;
	return 0;
}

void wtio_sys_block_xfsz(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
}
