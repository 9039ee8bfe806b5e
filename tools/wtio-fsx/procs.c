/* SPDX-License-Identifier: MIT */
/*
 * procs.c - wtio-fsx --procs=N: N cooperating processes on one file, one
 * shadow in shared memory. Each operation of any process, with its checks,
 * runs under one process-shared lock, so the file must behave exactly as
 * the shadow says whichever process wrote last: what one cache shared by
 * every process of a program (wtio-run --shared) promises, and what
 * separate per-process caches cannot give.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsx.h"

#define FSX_MAX_PROCS 64

struct fsx_shared {
	pthread_mutex_t lock;	/* robust: a process may die holding it */
	_Atomic int failed;	/* some process failed: the others stop */
	uint64_t size;
	uint8_t data[];
};

int fsx_proc_index, fsx_nprocs = 1;
static pid_t pids[FSX_MAX_PROCS];
static size_t shared_len;

void fsx_shadow_init_shared(struct fsx_shadow *s, uint64_t cap)
{
	pthread_mutexattr_t a;
	struct fsx_shared *sh;

	shared_len = sizeof(*sh) + (cap ? cap : 1);
	sh = mmap(NULL, shared_len, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, "wtio-fsx: shared shadow: %s\n", strerror(errno));
		exit(2);
	}
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (pthread_mutex_init(&sh->lock, &a)) {
		fprintf(stderr, "wtio-fsx: shared shadow: no process-shared lock\n");
		exit(2);
	}
	pthread_mutexattr_destroy(&a);
	s->sh = sh;
	s->data = sh->data;
	s->size = 0;
	s->cap = cap;
}

void fsx_shadow_lock(struct fsx_shadow *s)
{
	int r;

	if (!s->sh)
		return;
	r = pthread_mutex_lock(&s->sh->lock);
	if (r == EOWNERDEAD) {
		/* it died in an operation: the file and the shadow may
		 * disagree, and that process reported why */
		s->sh->failed = 1;
		pthread_mutex_consistent(&s->sh->lock);
	} else if (r) {
		fprintf(stderr, "wtio-fsx: process %d: shadow lock: %s\n",
			fsx_proc_index, strerror(r));
		exit(1);
	}
	if (s->sh->failed) {
		pthread_mutex_unlock(&s->sh->lock);
		fprintf(stderr, "wtio-fsx: process %d stops: another process "
			"failed\n", fsx_proc_index);
		exit(1);
	}
	s->size = s->sh->size;
}

void fsx_shadow_unlock(struct fsx_shadow *s)
{
	if (!s->sh)
		return;
	s->sh->size = s->size;
	pthread_mutex_unlock(&s->sh->lock);
}

void fsx_shadow_free(struct fsx_shadow *s)
{
	if (s->sh)
		munmap(s->sh, shared_len);
	else
		free(s->data);
	s->data = NULL;
	s->sh = NULL;
}

int fsx_procs_start(int nprocs)
{
	int i;

	fsx_nprocs = nprocs;
	fflush(NULL);	/* no buffered output printed twice */
	for (i = 1; i < nprocs; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "wtio-fsx: fork: %s\n", strerror(errno));
			while (--i > 0)
				kill(pids[i], SIGKILL);
			exit(2);
		}
		if (pid == 0) {
			fsx_proc_index = i;
			return i;
		}
		pids[i] = pid;
	}
	return 0;
}

int fsx_procs_wait(void)
{
	int i, st, bad = 0;

	for (i = 1; i < fsx_nprocs; i++) {
		if (waitpid(pids[i], &st, 0) != pids[i]) {
			fprintf(stderr, "wtio-fsx: waitpid: %s\n", strerror(errno));
			bad = 1;
		} else if (WIFSIGNALED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "wtio-fsx: process %d (pid %d) %s %d\n", i,
				(int)pids[i], WIFSIGNALED(st) ? "killed by signal" :
				"exited", WIFSIGNALED(st) ? WTERMSIG(st) :
				WEXITSTATUS(st));
			bad = 1;
		}
	}
	return bad;
}
