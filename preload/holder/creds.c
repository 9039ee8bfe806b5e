/* SPDX-License-Identifier: MIT */
/*
 * creds.c - the holder opens files for the program's processes with its
 * own credentials, so it may open for a process only what that process
 * could open itself: one whose credentials are the holder's. A process
 * of the program can have fewer rights than the holder at any time after
 * its connection was made: it dropped capabilities (a sandbox, setpriv),
 * changed its uid, gid, fsuid or groups (a daemon dropping root), entered
 * another user namespace, set no_new_privs for a Landlock or seccomp
 * sandbox. A check in the client alone is no check: such a process keeps
 * its connection and can speak the protocol itself. So the holder asks,
 * at every open, who sent the request, as the kernel says
 * (SCM_CREDENTIALS on the connection, SO_PASSCRED), and reads that
 * process's current credentials from /proc/PID/status. If they differ in
 * anything a permission decision depends on, the open is not served: the
 * client's own open is then the kernel's, with the kernel's answer.
 *
 * The sender must be the connection's own process (SO_PEERCRED at
 * accept), and that process must still be alive (its pidfd) after
 * /proc/PID/status was read: then PID named it all along, never a
 * process that took the number over. (A sender with CAP_SYS_ADMIN can
 * name another pid in SCM_CREDENTIALS; it must then also hold that
 * process's connection. It is not confined by dropping other
 * capabilities anyway.)
 *
 * Credentials are per thread in the kernel; /proc/PID/status shows the
 * thread group leader's. Threads share one address space, so a thread
 * with fewer rights than its leader is not confined from it; the
 * client's own check (remote.c) looks at the calling thread's, so that a
 * thread of an honest program that changed its fsuid gets the kernel's
 * answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../holder_proto.h"
#include "creds.h"
#include "log.h"

#define CAP_FOWNER_BIT 3

/* What a permission decision on a file depends on. */
struct creds {
	long fsuid, fsgid;
	unsigned long long cap_eff;
	long nnp, seccomp, filters;	/* -1: the kernel shows no such line */
	const char *groups;		/* the "Groups:" line's values */
	size_t groups_len;
	dev_t userns_dev;
	ino_t userns_ino;
	char *buf;			/* the status text (groups points in) */
};

static struct creds self;
static bool self_known;
static uint32_t self_groups[HOLDER_GROUPS_REPORTED];
static int self_ngroups;

/* The whole of a /proc file, NUL-terminated, in a malloc'd buffer. */
static char *read_all(const char *path)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - len < 2) {
			nb = cap < (1u << 22) ? realloc(buf, cap * 2) : NULL;
			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	return buf;
fail:
	close(fd);
	free(buf);
	return NULL;
}

/* The values of the line "key:\t..." (key at a line's start: the Name
 * line is escaped, so no other line starts with a key), or NULL. */
static const char *field(const char *buf, const char *key, size_t *len)
{
	size_t k = strlen(key);
	const char *p = buf, *e;

	while (p && *p) {
		if (!strncmp(p, key, k) && p[k] == ':') {
			p += k + 1;
			while (*p == '\t' || *p == ' ')
				p++;
			e = strchr(p, '\n');
			*len = e ? (size_t)(e - p) : strlen(p);
			return p;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

/* The n-th (0-based) number of a line's values, or -1. */
static long nth(const char *buf, const char *key, int n, int base)
{
	const char *p;
	char *end;
	size_t len;
	long v = -1;

	p = field(buf, key, &len);
	if (!p)
		return -1;
	for (; n >= 0; n--) {
		errno = 0;
		v = strtol(p, &end, base);
		if (end == p || errno)
			return -1;
		p = end;
	}
	return v;
}

/* Parse the status of pid (0: the holder) into c. 0 or -1. */
static int creds_read(pid_t pid, struct creds *c)
{
	char path[64];
	struct stat st;
	const char *p;
	size_t len;

	memset(c, 0, sizeof(*c));
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	c->buf = read_all(path);
	if (!c->buf)
		return -1;
	c->fsuid = nth(c->buf, "Uid", 3, 10);
	c->fsgid = nth(c->buf, "Gid", 3, 10);
	p = field(c->buf, "CapEff", &len);
	c->cap_eff = p ? strtoull(p, NULL, 16) : 0;
	c->nnp = nth(c->buf, "NoNewPrivs", 0, 10);
	c->seccomp = nth(c->buf, "Seccomp", 0, 10);
	c->filters = nth(c->buf, "Seccomp_filters", 0, 10);
	c->groups = field(c->buf, "Groups", &c->groups_len);
	while (c->groups && c->groups_len &&
	       (c->groups[c->groups_len - 1] == ' ' ||
		c->groups[c->groups_len - 1] == '\t'))
		c->groups_len--;
	if (c->fsuid < 0 || c->fsgid < 0 || !p || !c->groups)
		goto fail;
	/* capabilities are relative to a user namespace */
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/user");
	if (stat(path, &st) < 0)
		goto fail;
	c->userns_dev = st.st_dev;
	c->userns_ino = st.st_ino;
	return 0;
fail:
	free(c->buf);
	c->buf = NULL;
	return -1;
}

int hcreds_init(void)
{
	const char *p;
	char *end;
	size_t len;

	if (creds_read(0, &self) < 0) {
		int err = -errno;

		hlog("cannot read the holder's own credentials (/proc/self/status): no open will be served");
		return err ? err : -EIO;
	}
	self_known = true;
	/* the groups for the client's check (HELLO's report) */
	p = self.groups;
	len = self.groups_len;
	self_ngroups = 0;
	while (len && self_ngroups >= 0) {
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		if (self_ngroups == HOLDER_GROUPS_REPORTED) {
			self_ngroups = -1;	/* too many: not reported */
			break;
		}
		self_groups[self_ngroups++] = (uint32_t)g;
		len -= (size_t)(end - p);
		p = end;
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
	}
	return 0;
}

/* Why c is not the holder's, or NULL. */
static const char *compare(const struct creds *c)
{
	if (c->fsuid != self.fsuid)
		return "another fsuid";
	if (c->fsgid != self.fsgid)
		return "another fsgid";
	if (c->groups_len != self.groups_len ||
	    memcmp(c->groups, self.groups, c->groups_len))
		return "other supplementary groups";
	if (c->cap_eff != self.cap_eff)
		return "other effective capabilities";
	if (c->userns_dev != self.userns_dev || c->userns_ino != self.userns_ino)
		return "another user namespace";
	if (c->nnp != self.nnp)
		return "no_new_privs (a Landlock or seccomp sandbox may restrict it)";
	if (c->seccomp != self.seccomp || c->filters != self.filters)
		return "other seccomp filters";
	return NULL;
}

/* Read the sender's credentials into c: NULL, or why they cannot be
 * told (c is then empty). */
static const char *sender(pid_t pid, pid_t conn_pid, int conn_pidfd,
			  struct creds *c)
{
	struct pollfd pf = { .fd = conn_pidfd, .events = POLLIN };

	memset(c, 0, sizeof(*c));
	if (!self_known)
		return "the holder's own credentials are not known";
	if (pid <= 0)
		return "the kernel named no sender";
	if (pid != conn_pid || conn_pidfd < 0)
		return "sent by another process than the connection's";
	if (creds_read(pid, c) < 0)
		return "its credentials cannot be read";
	/* still alive after the read: pid was that process all along */
	if (poll(&pf, 1, 0) != 0) {
		free(c->buf);
		c->buf = NULL;
		return "the process ended";
	}
	return NULL;
}

const char *hcreds_differ(pid_t pid, pid_t conn_pid, int conn_pidfd)
{
	struct creds c;
	const char *why = sender(pid, conn_pid, conn_pidfd, &c);

	if (!why)
		why = compare(&c);
	free(c.buf);
	return why;
}

int hcreds_may_own(pid_t pid, pid_t conn_pid, int conn_pidfd, uid_t owner)
{
	struct creds c;
	int ret = -EPERM;

	if (sender(pid, conn_pid, conn_pidfd, &c))
		return -EPERM;
	if ((uid_t)c.fsuid == owner ||
	    (c.userns_dev == self.userns_dev && c.userns_ino == self.userns_ino &&
	     (c.cap_eff & (1ull << CAP_FOWNER_BIT))))
		ret = 0;
	free(c.buf);
	return ret;
}

void hcreds_report(int64_t *val, int64_t *val2, int64_t *val3)
{
	*val = *val2 = *val3 = 0;
	if (!self_known || self_ngroups < 0)
		return;		/* no report: the holder's check alone */
	*val = (int64_t)(((uint64_t)(uint32_t)self.fsgid << 32) |
			 (uint32_t)self.fsuid);
	*val2 = (int64_t)self.cap_eff;
	*val3 = (int64_t)(holder_groups_hash(self_groups, self_ngroups) |
			  HELLO_CREDS);
}
