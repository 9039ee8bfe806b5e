/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the cache lives in the process image: write everything back
 * (and put the kernel file positions right) before exec replaces it, and
 * before _exit ends the process without running exit handlers. In
 * shared mode the cache is the holder's: fork hands the child the
 * parent's references, exec passes the inherited descriptors through.
 */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "shim.h"

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* A vfork child shares the parent's memory (and cache) but has its own
 * pid: leave the parent's cache alone there. */
pid_t shim_pid;

static bool own_process(void)
{
	return getpid() == shim_pid;
}

bool shim_vfork_child(void)
{
	return shim_pid && getpid() != shim_pid;
}

/* The new image knows nothing of the cache, and inherits the descriptors
 * without FD_CLOEXEC (with the lease and O_DIRECT the shim set on their
 * descriptions): every served file is written back and handed to the
 * kernel for good (if exec fails, the process goes on passing them
 * through). */
static int before_exec(void)
{
	int e;

	shim_resolve();
	/* shared: the inherited ones only (the holder keeps the others
	 * until the new image says HELLO_EXEC, or the exec fails) */
	if (own_process() && (e = remote_before_exec()) < 0) {
		errno = -e;
		return -1;
	}
	if (own_process())
		shim_demote_where(DEMOTE_ALL, "exec");
	return 0;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);

SHIM_API int execve(const char *path, char *const argv[], char *const envp[])
{
	if (before_exec() < 0)
		return -1;
	return ((execve_fn)next("execve"))(path, argv, envp);
}

SHIM_API int execv(const char *path, char *const argv[])
{
	if (before_exec() < 0)
		return -1;
	return ((execv_fn)next("execv"))(path, argv);
}

SHIM_API int execvp(const char *file, char *const argv[])
{
	if (before_exec() < 0)
		return -1;
	return ((execv_fn)next("execvp"))(file, argv);
}

SHIM_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (before_exec() < 0)
		return -1;
	return ((execve_fn)next("execvpe"))(file, argv, envp);
}

SHIM_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (before_exec() < 0)
		return -1;
	return ((int (*)(int, char *const[], char *const[]))next("fexecve"))(
		fd, argv, envp);
}

/* execl, execlp, execle: gather the arguments, then the v forms above. */
#define GATHER(arg0, last)						\
	size_t n_ = 1;							\
	va_list ap_;							\
	va_start(ap_, arg0);						\
	while (va_arg(ap_, const char *))				\
		n_++;							\
	va_end(ap_);							\
	char **argv_ = alloca((n_ + 1) * sizeof(char *));		\
	va_start(ap_, arg0);						\
	argv_[0] = (char *)arg0;					\
	for (size_t i_ = 1; i_ <= n_; i_++)				\
		argv_[i_] = va_arg(ap_, char *);			\
	last;								\
	va_end(ap_)

SHIM_API int execl(const char *path, const char *arg, ...)
{
	GATHER(arg, (void)0);
	return execv(path, argv_);
}

SHIM_API int execlp(const char *file, const char *arg, ...)
{
	GATHER(arg, (void)0);
	return execvp(file, argv_);
}

SHIM_API int execle(const char *path, const char *arg, ...)
{
	char **envp;

	GATHER(arg, envp = va_arg(ap_, char **));
	return execve(path, argv_, envp);
}

/*
 * vfork: the child borrows the parent's memory and runs no atfork handler,
 * so the cache would neither be written back for it nor kept apart from
 * it (a shell's child appending to a served descriptor, then the shell
 * appending at its stale size). A fork is a valid vfork.
 */
SHIM_API pid_t vfork(void)
{
	return fork();
}

/* fork: in shared mode the child is handed the parent's references to
 * the holder's files (remote_fork); otherwise the libc call, whose
 * atfork handlers (fdtable.c) pass the served files through. */
SHIM_API pid_t fork(void)
{
	static pid_t (*next_fork)(void);

	if (!next_fork)
		next_fork = (pid_t (*)(void))next("fork");
	shim_resolve();
	shim_init();
	if (!next_fork) {
		errno = ENOSYS;
		return -1;
	}
	return remote_fork(next_fork);
}

/* posix_spawn's child (and system's, popen's: glibc spawns them
 * internally) inherits the descriptors without FD_CLOEXEC: their files
 * are written back and passed through for good first. File actions may
 * dup2 any descriptor into the child (the shim does not read them): then
 * every served file is. The rest is written back (a child that stat()s a
 * file by path sees its size; its open of one breaks the lease). */
static void before_spawn(bool any)
{
	shim_resolve();
	if (own_process() && remote_on) {
		remote_demote_inheritable(any, HDEMOTE_EXEC);
	} else if (own_process()) {
		shim_demote_where(any ? DEMOTE_ALL : DEMOTE_INHERITABLE,
				  "a spawned child inherits it");
		shim_flush_all(false);
	}
}

typedef int (*spawn_fn)(pid_t *, const char *,
			const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

SHIM_API int posix_spawn(pid_t *pid, const char *path,
			 const posix_spawn_file_actions_t *fa,
			 const posix_spawnattr_t *attr, char *const argv[],
			 char *const envp[])
{
	before_spawn(fa != NULL);
	return ((spawn_fn)next("posix_spawn"))(pid, path, fa, attr, argv, envp);
}

SHIM_API int posix_spawnp(pid_t *pid, const char *file,
			  const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[],
			  char *const envp[])
{
	before_spawn(fa != NULL);
	return ((spawn_fn)next("posix_spawnp"))(pid, file, fa, attr, argv, envp);
}

SHIM_API int system(const char *cmd)
{
	before_spawn(false);
	return ((int (*)(const char *))next("system"))(cmd);
}

SHIM_API FILE *popen(const char *cmd, const char *type)
{
	before_spawn(false);
	return ((FILE *(*)(const char *, const char *))next("popen"))(cmd, type);
}

SHIM_API void _exit(int status)
{
	shim_resolve();
	if (own_process())
		shim_close_all();
	((void (*)(int))next("_exit"))(status);
	__builtin_unreachable();
}

SHIM_API void _Exit(int status)
{
	_exit(status);
}
