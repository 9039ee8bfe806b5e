/* SPDX-License-Identifier: MIT */
/*
 * memcg.c - the memory cgroup the kernel modes run in. It is a child of
 * the cgroup this process is in (so it fits under whatever limits that
 * one has). The process is moved in for a kernel mode's trial, so that
 * the page cache it creates is charged there and reclaimed (and written
 * back) at the limit, and moved home after it; what stays charged is
 * emptied before the next trial. Paths are fixed at setup so that the
 * signal-time teardown needs only open, write, close and rmdir.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcg.h"

static int version;		/* 0 none, 1, 2 */
static char home[PATH_MAX - 64];	/* the cgroup the process came from */
static char cg[PATH_MAX];
	/* ours */
static char home_procs[PATH_MAX + 16], cg_procs[PATH_MAX + 16];
static char pidstr[24];
static volatile int inside;

/* Async-signal-safe. */
static int put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

static int put_in(const char *dir, const char *file, const char *s)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	return put(p, s);
}

static int get_u64(const char *dir, const char *file, uint64_t *v)
{
	char p[PATH_MAX + 64], buf[64];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	FILE *f = fopen(p, "re");
	if (!f)
		return -errno;
	int ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	*v = strtoull(buf, NULL, 10);
	return 0;
}

static bool has_token(const char *list, const char *tok)
{
	size_t n = strlen(tok);
	for (const char *p = list; (p = strstr(p, tok)); p += n)
		if ((p == list || p[-1] == ',' || p[-1] == ' ') &&
		    (p[n] == 0 || p[n] == ',' || p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

/* The mount point of the v1 memory controller (v == 1) or of cgroup2. */
static int find_mount(int v, char *out, size_t len)
{
	char dev[256], mnt[1024], type[64], opts[1024];
	FILE *f = fopen("/proc/mounts", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fscanf(f, "%255s %1023s %63s %1023s %*d %*d", dev, mnt, type, opts) == 4)
		if ((v == 1 && !strcmp(type, "cgroup") && has_token(opts, "memory")) ||
		    (v == 2 && !strcmp(type, "cgroup2"))) {
			snprintf(out, len, "%s", mnt);
			found = 1;
		}
	fclose(f);
	return found;
}

/* This process's path in hierarchy v (1: the memory controller's line). */
static int own_path(int v, char *out, size_t len)
{
	char line[PATH_MAX + 64];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		if ((v == 1 && has_token(c1 + 1, "memory")) || (v == 2 && !strcmp(line, "0") && !c1[1])) {
			snprintf(out, len, "%s", c2 + 1);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

int memcg_setup(char *why, size_t len)
{
	char mnt[1024], rel[2048], p[PATH_MAX + 64];
	struct stat st;
	int v = 0;

	if (version)
		return 0;
	if (find_mount(1, mnt, sizeof(mnt)) && own_path(1, rel, sizeof(rel)))
		v = 1;
	else if (find_mount(2, mnt, sizeof(mnt)) && own_path(2, rel, sizeof(rel)))
		v = 2;
	if (!v) {
		snprintf(why, len, "no memory cgroup controller is mounted");
		return -ENOENT;
	}
	snprintf(home, sizeof(home), "%s%s", mnt, strcmp(rel, "/") ? rel : "");
	if (v == 2) {
		int err = put_in(home, "cgroup.subtree_control", "+memory");
		if (err) {
			snprintf(why, len, "cgroup v2: cannot enable the memory controller below %s "
				 "(%s; a cgroup that holds processes cannot); run wtio-bench from "
				 "a delegated cgroup", home, strerror(-err));
			return err;
		}
	}
	snprintf(cg, sizeof(cg), "%s/wtio-bench.%d", home, (int)getpid());
	if (mkdir(cg, 0755) && !(errno == EEXIST && !rmdir(cg) && !mkdir(cg, 0755))) {
		int err = -errno;
		snprintf(why, len, "cannot make %s: %s", cg, strerror(errno));
		cg[0] = 0;
		return err;
	}
	snprintf(p, sizeof(p), "%s/%s", cg, v == 1 ? "memory.limit_in_bytes" : "memory.max");
	if (stat(p, &st)) {
		snprintf(why, len, "%s has no %s", cg, v == 1 ? "memory.limit_in_bytes" : "memory.max");
		rmdir(cg);
		cg[0] = 0;
		return -ENOENT;
	}
	snprintf(home_procs, sizeof(home_procs), "%s/cgroup.procs", home);
	snprintf(cg_procs, sizeof(cg_procs), "%s/cgroup.procs", cg);
	snprintf(pidstr, sizeof(pidstr), "%d", (int)getpid());
	version = v;
	return 0;
}

const char *memcg_version(void)
{
	return version == 1 ? "v1" : version == 2 ? "v2" : NULL;
}

const char *memcg_path(void)
{
	return version ? cg : "";
}

int memcg_enter(uint64_t limit)
{
	char s[32];
	int err;

	if (!version)
		return -ENOENT;
	snprintf(s, sizeof(s), "%llu", (unsigned long long)limit);
	if (version == 1) {
		/* What earlier trials left charged goes first (no task inside). */
		put_in(cg, "memory.force_empty", "0");
		err = put_in(cg, "memory.limit_in_bytes", s);
		put_in(cg, "memory.max_usage_in_bytes", "0");
	} else {
		err = put_in(cg, "memory.max", s);
		put_in(cg, "memory.swap.max", "0");
	}
	if (err)
		return err;
	err = put(cg_procs, pidstr);
	if (!err)
		inside = 1;
	return err;
}

int memcg_leave(void)
{
	if (!version || !inside)
		return 0;
	int err = put(home_procs, pidstr);
	if (!err)
		inside = 0;
	return err;
}

int memcg_expel_self(void)
{
	char me[24];
	int n = 0;
	unsigned int v = (unsigned int)getpid();

	if (!version || !inside)
		return 0;
	/* No snprintf after fork: digits by hand. */
	do
		me[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 23);
	for (int i = 0; i < n / 2; i++) {
		char t = me[i];
		me[i] = me[n - 1 - i];
		me[n - 1 - i] = t;
	}
	me[n] = 0;
	return put(home_procs, me);
}

uint64_t memcg_peak(void)
{
	uint64_t v = 0;
	if (version == 1)
		get_u64(cg, "memory.max_usage_in_bytes", &v);
	else if (version == 2)
		get_u64(cg, "memory.peak", &v);
	return v;
}

void memcg_teardown(void)
{
	if (!version)
		return;
	memcg_leave();
	/* The last threads leave with their exit; give them a moment. */
	for (int i = 0; i < 50 && rmdir(cg) && errno == EBUSY; i++)
		usleep(20000);
	version = 0;
}

void memcg_teardown_from_signal(void)
{
	if (!version)
		return;
	if (inside)
		put(home_procs, pidstr);
	rmdir(cg);
}
