/* SPDX-License-Identifier: MIT */
/*
 * holder_creds.c - a process of a `wtio-run --shared` program that drops
 * rights after its connection to the holder is made and then speaks the
 * protocol itself (no shim, so no check of the client's own): the holder
 * must not open for it what the kernel would refuse it. Run by
 * tests/shim-shared-creds.sh as root, as the program of wtio-run --shared
 * with an empty --preload library.
 *
 *   holder_creds DIR MODE
 *
 * DIR/pub (readable by all), DIR/priv (nobody's, 0600) and DIR/rpriv
 * (root's, 0600) exist. As
 * root, with the holder's credentials, an open of DIR/pub is served.
 * Then MODE: caps (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH and CAP_FOWNER
 * out of the effective set), setuid, seteuid, setfsuid (to 65534, gid
 * too), or inherit (a child, its rights unchanged, sends on its parent's
 * connection). Every open of the file the kernel refuses it (DIR/priv
 * without the capabilities, DIR/rpriv as uid 65534: read, read-write,
 * truncating, creating) and a create of DIR/new must then be answered
 * HOLDER_NOT_SERVED (the client would open through the kernel), nothing
 * created; and the kernel itself must refuse that file (or the rights
 * were not dropped and the test means nothing). Prints "refused N" (the
 * refused opens) and exits 0, 1 on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/capability.h>

#include "holder_call.h"


static int sock;
static char *buf;
static const char *dir;

static int64_t call(uint32_t op, int64_t a0, int64_t a1, int64_t a2,
		    int64_t a3, int fd_in, struct holder_reply *out,
		    int *fd_out)
{
	struct holder_req req = { .op = op, .arg = { a0, a1, a2, a3 } };

	return holder_call(sock, &req, fd_in, out, fd_out);
}

static void hello(void)
{
	const char *name = getenv(HOLDER_ENV);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct holder_reply rep;
	socklen_t len;
	int memfd, fd;

	CHECKF(name && name[0] == '@', "%s=%s", HOLDER_ENV, name ? name : "");
	strncpy(a.sun_path + 1, name + 1, sizeof(a.sun_path) - 2);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	CHECKF(sock >= 0, "socket: %s", strerror(errno));
	CHECKF(connect(sock, (struct sockaddr *)&a, len) == 0, "connect: %s",
	       strerror(errno));
	memfd = memfd_create("holder-creds", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECKF(memfd >= 0 && ftruncate(memfd, HOLDER_BUF_MIN) == 0, "memfd");
	buf = mmap(NULL, HOLDER_BUF_MIN, PROT_READ | PROT_WRITE, MAP_SHARED,
		   memfd, 0);
	CHECKF(buf != MAP_FAILED, "mmap");
	CHECKF(call(HOP_HELLO, HOLDER_PROTO_VERSION, HOLDER_BUF_MIN, 0, 0,
		    memfd, &rep, &fd) == 0, "HELLO: %lld", (long long)rep.status);
	close(memfd);
	/* the report the shim's own check compares with */
	CHECKF((uint64_t)rep.val3 & HELLO_CREDS, "HELLO reports no credentials");
	CHECKF((uint32_t)rep.val == (uint32_t)setfsuid((uid_t)-1),
	       "HELLO reports fsuid %u", (unsigned int)(uint32_t)rep.val);
}

static int64_t hopen(const char *name, int flags, int *fd)
{
	struct holder_reply rep;

	snprintf(buf, HOLDER_BUF_MIN, "%s/%s", dir, name);
	return call(HOP_OPEN, flags, 0600, 0, 0, -1, &rep, fd);
}

static void drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	CHECKF(syscall(SYS_capget, &h, d) == 0, "capget: %s", strerror(errno));
	d[0].effective &= ~((1u << CAP_DAC_OVERRIDE) |
			    (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER));
	CHECKF(syscall(SYS_capset, &h, d) == 0, "capset: %s", strerror(errno));
}

static void drop(const char *mode)
{
	if (!strcmp(mode, "caps")) {
		drop_caps();
	} else if (!strcmp(mode, "setuid")) {
		CHECKF(setresgid(65534, 65534, 65534) == 0 &&
		       setresuid(65534, 65534, 65534) == 0, "setresuid: %s",
		       strerror(errno));
	} else if (!strcmp(mode, "seteuid")) {
		CHECKF(setegid(65534) == 0 && seteuid(65534) == 0,
		       "seteuid: %s", strerror(errno));
	} else if (!strcmp(mode, "setfsuid")) {
		setfsgid(65534);
		setfsuid(65534);
		CHECKF(setfsuid((uid_t)-1) == 65534, "setfsuid");
	} else {
		CHECKF(0, "unknown mode %s", mode);
	}
}

/* The refused opens of name, with the rights dropped (or from a
 * child). */
static int refusals(const char *name)
{
	static const int flags[] = { O_RDONLY, O_RDWR, O_WRONLY | O_TRUNC,
				     O_RDWR | O_CREAT };
	char path[4096];
	struct stat st;
	int64_t r;
	int i, fd, n = 0;

	for (i = 0; i < 4; i++) {
		r = hopen(name, flags[i], &fd);
		CHECKF(r == HOLDER_NOT_SERVED && fd < 0,
		       "%s, flags %#x: answered %lld (want not served)",
		       name, flags[i], (long long)r);
		n++;
	}
	r = hopen("new", O_RDWR | O_CREAT | O_EXCL, &fd);
	CHECKF(r == HOLDER_NOT_SERVED && fd < 0,
	       "new: answered %lld (want not served)", (long long)r);
	n++;
	snprintf(path, sizeof(path), "%s/new", dir);
	CHECKF(lstat(path, &st) < 0 && errno == ENOENT, "the holder created %s",
	       path);
	return n;
}

int main(int argc, char **argv)
{
	char path[4096];
	const char *name;
	int64_t r;
	int fd, n, status;
	pid_t pid;

	CHECKF(argc == 3, "usage: holder_creds DIR caps|setuid|seteuid|setfsuid|inherit");
	dir = argv[1];
	hello();
	/* the holder's own credentials: served */
	r = hopen("pub", O_RDONLY, &fd);
	CHECKF(r == HOLDER_SERVED && fd >= 0, "pub: answered %lld (want served)",
	       (long long)r);
	close(fd);
	if (!strcmp(argv[2], "inherit")) {
		/* a raw fork keeps the connection (the shim's would close
		 * it): the child is not the connection's process */
		pid = fork();
		CHECKF(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			n = refusals("priv");
			printf("refused %d\n", n);
			fflush(stdout);
			_exit(0);
		}
		CHECKF(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		       WEXITSTATUS(status) == 0, "the child failed");
		/* and the parent is served again */
		r = hopen("pub", O_RDONLY, &fd);
		CHECKF(r == HOLDER_SERVED && fd >= 0,
		       "pub after the child: answered %lld", (long long)r);
		close(fd);
		return 0;
	}
	drop(argv[2]);
	name = strcmp(argv[2], "caps") ? "rpriv" : "priv";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	CHECKF(fd < 0 && errno == EACCES,
	       "the kernel let %s open %s: rights not dropped", argv[2], path);
	n = refusals(name);
	printf("refused %d\n", n);
	return 0;
}
