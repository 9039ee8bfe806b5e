/* SPDX-License-Identifier: MIT */
/*
 * who.c - why a file the holder wants to serve is "open elsewhere" (its
 * write lease refused): which processes have a descriptor of it (pid,
 * command, descriptor, flags), and how long ago the holder itself last
 * closed it. Said with --debug only (a walk of every process's
 * descriptors in /proc), so that a rare refusal in a test's log explains
 * itself; none found means a description no descriptor names (a mapping,
 * or one the kernel has not released yet).
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "table.h"
#include "who.h"

/* The flags line of /proc/PID/fdinfo/FD (octal), -1 if unknown. */
static long fd_flags(const char *pid, const char *fd)
{
	char path[600], line[128];
	long fl = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/fdinfo/%s", pid, fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "flags: %lo", &fl) == 1)
			break;
	fclose(f);
	return fl;
}

static void comm_of(const char *pid, char *out, size_t len)
{
	char path[320];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	snprintf(out, len, "?");
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

/* Append the holders of pid's descriptors of (dev, ino) to buf. */
static int scan_pid(const char *pid, const struct stat *want, int skip1,
		    int skip2, char *buf, size_t len, size_t *used, int found)
{
	char path[600], comm[32];
	struct dirent *d;
	struct stat st;
	bool self = atoi(pid) == (int)getpid();
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%s/fd", pid);
	dir = opendir(path);
	if (!dir)
		return found;
	while ((d = readdir(dir))) {
		int fd = atoi(d->d_name);
		long fl;

		if (d->d_name[0] == '.' ||
		    (self && (fd == skip1 || fd == skip2)))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, d->d_name);
		if (stat(path, &st) < 0 || st.st_dev != want->st_dev ||
		    st.st_ino != want->st_ino)
			continue;
		fl = fd_flags(pid, d->d_name);
		if (fl >= 0 && (fl & 010000000))	/* O_PATH: no open */
			continue;
		if (found++ < 4 && *used < len) {
			comm_of(pid, comm, sizeof(comm));
			*used += (size_t)snprintf(buf + *used, len - *used,
				"%spid %s (%s%s) fd %d flags 0%lo",
				found > 1 ? ", " : "", pid, comm,
				self ? ", the holder" : "", fd, fl);
		}
	}
	closedir(dir);
	return found;
}

void hwho_elsewhere(int fd, int skip, char *buf, size_t len)
{
	struct stat want;
	struct dirent *d;
	size_t used;
	long ago;
	DIR *dir;
	int found = 0;

	used = (size_t)snprintf(buf, len, "open elsewhere (");
	if (fstat(fd, &want) < 0 || !(dir = opendir("/proc"))) {
		snprintf(buf, len, "open elsewhere");
		return;
	}
	while ((d = readdir(dir)))
		if (d->d_name[0] >= '1' && d->d_name[0] <= '9')
			found = scan_pid(d->d_name, &want, fd, skip, buf, len,
					 &used, found);
	closedir(dir);
	if (!found && used < len)
		used += (size_t)snprintf(buf + used, len - used,
			"no descriptor of it in any process: a mapping, or a description the kernel still holds");
	else if (found > 4 && used < len)
		used += (size_t)snprintf(buf + used, len - used, ", %d more",
					 found - 4);
	ago = hino_closed_ago(want.st_dev, want.st_ino);
	if (ago >= 0 && used < len)
		used += (size_t)snprintf(buf + used, len - used,
			"; the holder closed or created it %ld ms ago", ago);
	if (used < len)
		snprintf(buf + used, len - used, ")");
}
