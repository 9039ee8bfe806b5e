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
 * accept), whose /proc/PID/status is opened once while its pidfd says it
 * is alive, so that the descriptor names that process for good, never
 * one that took the number over; its user namespace comes through the
 * pidfd too. (A sender with CAP_SYS_ADMIN can
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
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../holder_proto.h"
#include "creds.h"
#include "log.h"

#define CAP_FOWNER_BIT 3
/* linux/pidfd.h (6.11), which clashes with fcntl.h */
#define PIDFD_GET_USER_NAMESPACE_ _IO(0xFF, 9)

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

/* The whole of a /proc file from its start, NUL-terminated, in a
 * malloc'd buffer (pread: a seq_file shows it anew from offset 0). */
static char *read_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nb;
	ssize_t n;

	if (!buf)
		return NULL;
	for (;;) {
		if (cap - len < 2) {
			nb = cap < (1u << 22) ? realloc(buf, cap * 2) : NULL;
			if (!nb)
				goto fail;
			buf = nb;
			cap *= 2;
		}
		n = pread(fd, buf + len, cap - len - 1, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	return buf;
fail:
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

/* Parse the status text c->buf (taken) into c. 0 or -1. */
static int creds_parse(struct creds *c)
{
	const char *p;
	size_t len;

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
	if (c->fsuid < 0 || c->fsgid < 0 || !p || !c->groups) {
		free(c->buf);
		c->buf = NULL;
		return -1;
	}
	return 0;
}

static bool ended(int pidfd)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };

	return poll(&pf, 1, 0) != 0;
}

/* p's /proc/PID/status: opened once while p's process is alive (its
 * pidfd), it names that process for good, never one that takes the
 * number over (its reads fail with ESRCH once the process is gone). */
static int peer_status(struct hcreds_peer *p)
{
	char path[64];
	int fd;

	if (p->status_fd >= 0)
		return p->status_fd;
	if (p->pidfd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ended(p->pidfd)) {
		close(fd);
		return -1;
	}
	p->status_fd = fd;
	return fd;
}

/* p's user namespace, through its pidfd (the process itself, or ESRCH);
 * before Linux 6.11, by its /proc path, with the pidfd asked after. */
static int peer_userns(struct hcreds_peer *p, struct stat *st)
{
	char path[64];
	int fd = ioctl(p->pidfd, PIDFD_GET_USER_NAMESPACE_, 0), r;

	if (fd >= 0) {
		r = fstat(fd, st);
		close(fd);
		return r;
	}
	if (errno != ENOTTY && errno != EINVAL && errno != EOPNOTSUPP)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)p->pid);
	if (stat(path, st) < 0 || ended(p->pidfd))
		return -1;
	return 0;
}

void hcreds_peer_close(struct hcreds_peer *p)
{
	if (p->pidfd >= 0)
		close(p->pidfd);
	if (p->status_fd >= 0)
		close(p->status_fd);
	p->pidfd = p->status_fd = -1;
}

int hcreds_init(void)
{
	const char *p;
	char *end;
	size_t len;

	struct stat st;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		self.buf = read_fd(fd);
		close(fd);
	}
	if (creds_parse(&self) < 0 ||
	    stat("/proc/self/ns/user", &st) < 0) {
		int err = -errno;

		hlog("cannot read the holder's own credentials (/proc/self/status): no open will be served");
		return err ? err : -EIO;
	}
	self.userns_dev = st.st_dev;
	self.userns_ino = st.st_ino;
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
static const char *sender(struct hcreds_peer *p, pid_t pid, struct creds *c)
{
	struct stat st;
	int fd;

	memset(c, 0, sizeof(*c));
	if (!self_known)
		return "the holder's own credentials are not known";
	if (pid <= 0)
		return "the kernel named no sender";
	if (pid != p->pid || p->pidfd < 0)
		return "sent by another process than the connection's";
	fd = peer_status(p);
	if (fd < 0)
		return "its credentials cannot be read";
	c->buf = read_fd(fd);
	if (creds_parse(c) < 0)
		return "its credentials cannot be read";
	if (peer_userns(p, &st) < 0) {
		free(c->buf);
		c->buf = NULL;
		return "its user namespace cannot be told";
	}
	c->userns_dev = st.st_dev;
	c->userns_ino = st.st_ino;
	return NULL;
}

const char *hcreds_differ(struct hcreds_peer *p, pid_t pid)
{
	struct creds c;
	const char *why = sender(p, pid, &c);

	if (!why)
		why = compare(&c);
	free(c.buf);
	return why;
}

int hcreds_may_own(struct hcreds_peer *p, pid_t pid, uid_t owner)
{
	struct creds c;
	int ret = -EPERM;

	if (sender(p, pid, &c))
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
