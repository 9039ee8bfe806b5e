/* SPDX-License-Identifier: MIT */
/*
 * orphan.c - who may be the child of a fork whose parent died between
 * HOP_FORK_PREPARE and HOP_FORK_DONE (so the holder never learnt the
 * child's pid): every live process of the program (a descendant of the
 * holder, its subreaper, where an orphan goes) started no earlier than
 * the token. Read from /proc once, when such a parent's death is heard:
 * a rare event, so a scan is cheap enough. The token's pins then go to
 * each of them (a process that is not the child holds them until it
 * ends: a delay, never a file closed under the real child).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "orphan.h"

uint64_t horphan_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* From /proc/PID/stat: its state, parent and start time (clock ticks
 * since boot). false if it is gone. */
static bool proc_stat(pid_t pid, char *state, pid_t *ppid,
		      unsigned long long *start)
{
	char path[64], buf[1024], *p;
	unsigned long long v;
	size_t n;
	FILE *f;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* the command name may hold spaces and parentheses: after the last
	 * ')' come field 3 (state), 4 (ppid), ... 22 (starttime) */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d", state, ppid) != 2)
		return false;
	for (field = 3, p++; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &v) != 1)
		return false;
	*start = v;
	return true;
}

/* pid descends from the holder (it is the subreaper of the program). */
static bool of_program(pid_t pid)
{
	pid_t self = getpid(), pp;
	unsigned long long st;
	char state;
	int depth;

	for (depth = 0; depth < 256; depth++) {
		if (!proc_stat(pid, &state, &pp, &st))
			return false;
		if (pp == self)
			return true;
		if (pp <= 1)
			return false;
		pid = pp;
	}
	return false;
}

int horphan_candidates(uint64_t since_ns, pid_t dead, pid_t *pids, int max)
{
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long since, start;
	struct dirent *d;
	DIR *dir;
	int n = 0;

	if (hz <= 0)
		hz = 100;
	/* the kernel truncates to ticks: one tick of margin (an earlier
	 * process taken for a candidate only delays a release) */
	since = since_ns / (1000000000ull / (unsigned long long)hz);
	since = since ? since - 1 : 0;
	dir = opendir("/proc");
	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		pid_t pid = (pid_t)atoi(d->d_name), pp;
		char state;

		if (pid <= 1 || pid == dead || pid == getpid())
			continue;
		if (!proc_stat(pid, &state, &pp, &start) || start < since ||
		    state == 'Z' || state == 'X' || !of_program(pid))
			continue;
		if (n == max) {
			n = -1;		/* too many to be sure of: keep it */
			break;
		}
		pids[n++] = pid;
	}
	closedir(dir);
	return n;
}
