/* SPDX-License-Identifier: MIT */
/*
 * run.c - wtio-run --shared: three processes.
 *
 *   wtio-run (front) --fork--> holder --fork--> PROGRAM
 *
 * The front waits for the program's status (the holder reports it on a
 * pipe) and exits with it, so that a caller waiting for wtio-run waits
 * for the program, not for its daemons. The holder is the program's
 * parent and subreaper: every process of the program ends up its child,
 * so waitpid's ECHILD says the last one has exited; it then closes every
 * file (write-back, exact size) and exits. When the program leaves no
 * process behind, the holder writes everything back before it reports
 * the status, so that the files are complete when wtio-run returns (ones
 * only dying are waited for); with
 * processes left (a daemon), it reports at once and writes back when the
 * last one ends (an open of a served file by anyone meanwhile breaks the
 * holder's lease, and waits for the write-back).
 *
 * The holder ignores the terminal's and kill's polite signals (the
 * program's end is what ends it, and its cache must be written back);
 * the front forwards the signals sent to it with kill(2) to the program,
 * and when the front dies of one it cannot catch (SIGKILL) before the
 * program has ended, the holder SIGKILLs the program: killing wtio-run's
 * pid kills the program, as without --shared (where wtio-run execs it).
 *
 * If the holder dies first, the front says what died with it from the
 * record the two share (record.h; report.c) and exits 125 when data was
 * lost; when the front returns while the holder serves processes left
 * behind, a watchdog it forks takes that over (report.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../holder_proto.h"
#include "conn.h"
#include "creds.h"
#include "ctx.h"
#include "demote.h"
#include "finish.h"
#include "lease.h"
#include "log.h"
#include "proc.h"
#include "record.h"
#include "report.h"
#include "run.h"
#include "shm.h"

/* Messages of the holder to the front; MSG_STARTED is the program's own,
 * sent on the same pipe once it has its go, before it execs: without it,
 * a holder that died took the program with it before it ran. */
enum { MSG_PID = 1, MSG_STATUS, MSG_FAILED, MSG_STARTED };
struct front_msg {
	int kind;
	int val;
};

static const int polite[] = { SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE,
			      SIGTSTP, SIGTTIN, SIGTTOU };
static const int forwarded[] = { SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGUSR1,
				 SIGUSR2, SIGALRM, SIGWINCH, SIGCONT };
static volatile pid_t program_pid;
/* The holder's: the program's process, until it is reaped. */
static volatile pid_t child_alive;
#define FRONT_DEATH_SIG	(SIGRTMIN + 12)

static void tell(int fd, int kind, int val)
{
	struct front_msg m = { kind, val };

	if (fd >= 0 && write(fd, &m, sizeof(m)) != sizeof(m)) {
		/* the front is gone: nobody to tell */
	}
}

/* ---- the program ---- */

static void program(char **argv, int go_fd, int front_fd,
		    const sigset_t *mask)
{
	char c = 0;
	ssize_t n;

	sigprocmask(SIG_SETMASK, mask, NULL);
	do {
		n = read(go_fd, &c, 1);
	} while (n < 0 && errno == EINTR);
	if (n != 1 || c != 'g')
		_exit(126);	/* the holder could not start, or died */
	/* (front_fd is close-on-exec: the front reads this before the end
	 * of its pipe, whoever dies when) */
	tell(front_fd, MSG_STARTED, (int)getpid());
	execvp(argv[0], argv);
	fprintf(stderr, "wtio-run: %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* ---- the holder ---- */

static void front_died(int sig)
{
	pid_t c = child_alive;

	(void)sig;
	if (c > 0)
		kill(c, SIGKILL);
}

/* Reap what has ended without waiting; true once no child is left. */
static bool reap_others(void)
{
	int st;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0)
		;
	return p < 0 && errno == ECHILD;
}

/* Whether the process is on its way out: exiting (PF_EXITING), or with
 * a SIGKILL pending that it has not acted on yet. */
static bool pid_dying(const char *pid)
{
	char path[64], buf[4096];
	unsigned long flags = 0;
	unsigned long long pend;
	const char *p;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;		/* gone already */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	/* past "pid (comm) ": state is field 3, flags field 9 */
	p = strrchr(buf, ')');
	for (i = 0; p && i < 7; i++)
		p = strchr(p + 1, ' ');
	if (p && sscanf(p + 1, "%lu", &flags) == 1 && (flags & 0x4))
		return true;
	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	for (p = buf; (p = strstr(p, "Pnd:\t")); p += 5)
		if (sscanf(p + 5, "%llx", &pend) == 1 &&
		    (pend & (1ull << (SIGKILL - 1))))
			return true;
	return false;
}

/*
 * After the program's own process: true once no other is left, waiting
 * while the ones left are only dying (SIGKILLed by the program just
 * before it ended, a large one's exit): they are not daemons left
 * behind, and returning before their end would return before the
 * write-back. False at once when one lives on, or after 10 s.
 */
static bool others_end(void)
{
	for (int tries = 0; tries < 2000; tries++) {
		char path[320], buf[4096];
		bool dying = true, any = false;
		DIR *d;
		struct dirent *e;

		if (reap_others())
			return true;
		d = opendir("/proc/self/task");
		if (!d)
			return false;
		while (dying && (e = readdir(d))) {
			ssize_t n;
			char *tok, *save;
			int fd;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/children",
				 e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf) - 1);
			close(fd);
			if (n <= 0)
				continue;
			buf[n] = 0;
			for (tok = strtok_r(buf, " \n", &save); tok && dying;
			     tok = strtok_r(NULL, " \n", &save)) {
				any = true;
				dying = pid_dying(tok);
			}
		}
		closedir(d);
		/* none listed (no /proc children files): as before */
		if (!dying || !any)
			return false;
		usleep(5000);
	}
	return false;
}

static void holder_loop(int front_fd, pid_t child)
{
	bool reported = false;
	int st;

	for (;;) {
		pid_t p = waitpid(-1, &st, 0);

		if (p == child) {
			child_alive = 0;
			/* Nothing else left: the files are written back
			 * before wtio-run returns. The processes are gone,
			 * so their connections end (no time limit, as at
			 * ECHILD below: a loaded machine may take seconds
			 * to close a dead process's sockets). */
			if (others_end() && hconn_wait_idle(-1)) {
				/* every death heard: its references dropped
				 * (and counted) before the end's counters */
				hproc_wait_ended(2000);
				hfinish();
				tell(front_fd, MSG_STATUS, st);
				return;
			}
			tell(front_fd, MSG_STATUS, st);
			close(front_fd);
			front_fd = -1;
			reported = true;
			hdebug("the program's process %d ended; others remain",
			       (int)child);
		} else if (p < 0 && errno == ECHILD) {
			/* the last process is gone; its connections end */
			hconn_wait_idle(-1);
			hproc_wait_ended(2000);
			hfinish();
			if (!reported)
				tell(front_fd, MSG_FAILED, 1);
			return;
		}
	}
}

static void stats_absolute(void)
{
	const char *st = getenv("WTIO_HOLDER_STATS");
	char cwd[4096], *abs;

	if (!st || !*st || st[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	abs = malloc(strlen(cwd) + strlen(st) + 2);
	if (!abs)
		return;
	sprintf(abs, "%s/%s", cwd, st);
	setenv("WTIO_HOLDER_STATS", abs, 1);
	free(abs);
}

static void holder(char **argv, int front_fd, int log_fd,
		   const sigset_t *mask)
{
	char name[108];
	int go[2], lsock, ret, devnull, r;
	size_t i;
	pid_t child;
	/* tests/shim-holder-death.sh: the holder stops itself just before
	 * it starts the program, to be killed there (wtio-run only) */
	bool pause_start = getenv("WTIO_RUN_TEST_PAUSE_START") != NULL;

	pid_t front = getppid();

	hlog_init(getenv("WTIO_DEBUG") && getenv("WTIO_DEBUG")[0] == '1');
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		hlog("PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
		goto failed;
	}
	lsock = hconn_listen(name, sizeof(name));
	if (lsock < 0) {
		hlog("the holder's socket: %s", strerror(-lsock));
		goto failed;
	}
	setenv(HOLDER_ENV, name, 1);
	unsetenv("WTIO_RUN_TEST_PAUSE_START");
	hdemote_test_init();
	if (pipe2(go, O_CLOEXEC) < 0)
		goto failed;
	child = fork();
	if (child < 0) {
		hlog("fork: %s", strerror(errno));
		goto failed;
	}
	if (child == 0) {
		close(go[1]);
		program(argv, go[0], front_fd, mask);
	}
	close(go[0]);
	child_alive = child;
	for (i = 0; i < sizeof(polite) / sizeof(polite[0]); i++)
		signal(polite[i], SIG_IGN);
	/* The program's ulimit -f is its processes' (each request carries
	 * the caller's): the holder's own writes must not be cut by it,
	 * nor its write-back killed by SIGXFSZ. */
	{
		struct rlimit fl;

		signal(SIGXFSZ, SIG_IGN);
		if (getrlimit(RLIMIT_FSIZE, &fl) == 0 &&
		    fl.rlim_cur != fl.rlim_max) {
			fl.rlim_cur = fl.rlim_max;
			setrlimit(RLIMIT_FSIZE, &fl);
		}
	}
	signal(FRONT_DEATH_SIG, front_died);
	if (prctl(PR_SET_PDEATHSIG, FRONT_DEATH_SIG) < 0 || getppid() != front)
		front_died(0);
	sigprocmask(SIG_SETMASK, mask, NULL);
	/* the program applied its umask to the modes it sends */
	hstats_umask(umask(0));
	/* not the program's directory: a holder outliving the program must
	 * not keep a file system busy (paths come absolute, or with a
	 * directory descriptor); a relative stats file is made absolute */
	stats_absolute();
	if (chdir("/") < 0)
		hlog("chdir /: %s", strerror(errno));
	/* every served file of the whole program costs the holder two
	 * descriptors: the program's soft limit would be reached by half its
	 * files; the hard limit is what the holder may take */
	{
		struct rlimit nofile;

		if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 &&
		    nofile.rlim_cur < nofile.rlim_max) {
			nofile.rlim_cur = nofile.rlim_max;
			setrlimit(RLIMIT_NOFILE, &nofile);
		}
	}
	hlease_block();		/* before any thread exists */
	ret = hctx_create();
	if (!ret && (r = hshm_init()) < 0)	/* then every seek asks */
		hlog("no shared position page: %s", strerror(-r));
	if (!ret)
		ret = hrec_start();
	if (!ret)
		ret = hlease_start(hdemote_broken);
	/* (no own credentials known: nothing served, the rest works) */
	if (!ret)
		hcreds_init();
	if (!ret)
		ret = hproc_start();
	if (!ret)
		ret = hconn_start(lsock);
	if (ret) {
		hlog("the cache holder cannot start: %s", strerror(-ret));
		close(go[1]);	/* the program exits 126 */
		tell(front_fd, MSG_PID, (int)child);
		waitpid(child, NULL, 0);
		tell(front_fd, MSG_FAILED, 126);
		_exit(126);
	}
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		close(devnull);
	}
	if (log_fd >= 0) {
		dup2(log_fd, 2);
		close(log_fd);
	}
	tell(front_fd, MSG_PID, (int)child);
	hdebug("serving process %d at %s", (int)child, name);
	hctx_debug_config();
	if (pause_start)
		raise(SIGSTOP);
	if (write(go[1], "g", 1) != 1)
		hlog("the program could not be started");
	close(go[1]);
	holder_loop(front_fd, child);
	_exit(0);
failed:
	tell(front_fd, MSG_FAILED, 126);
	_exit(126);
}

/* ---- the front ---- */

static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* the terminal's signals reach the program's group already */
	if ((si->si_code == SI_USER || si->si_code == SI_QUEUE) && program_pid > 0)
		kill(program_pid, sig);
}

static int die_like(int st)
{
	struct rlimit no_core = { 0, 0 };
	int sig;

	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (!WIFSIGNALED(st))
		return 1;
	sig = WTERMSIG(st);
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	{
		sigset_t s;

		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
	}
	raise(sig);
	return 128 + sig;
}

/* The holder died: the program, now this process's child (subreaper),
 * is waited for: its wait status, -1 if it cannot be. */
static int orphan_wait(void)
{
	int st;
	pid_t p;

	for (;;) {
		p = waitpid(-1, &st, 0);
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0)
			return -1;
		if (p == program_pid)
			return st;
		/* a daemon the holder had */
	}
}

/* The holder died before the program's status: what was lost with it is
 * said now; the program is still waited for. wtio-run's status is the
 * program's, or HOLDER_LOST_STATUS if data was lost (an exit 0 then
 * would say all went well). Dead before the program was started: the
 * program never ran, HOLDER_LOST_STATUS too (its own status would be
 * the 126 of a program that cannot be executed). */
static int holder_died(pid_t h, struct hrec *rec, int log_fd, bool started)
{
	int hst = -1, st;
	bool lost;

	hshm_mark_dead();
	while (waitpid(h, &hst, 0) < 0 && errno == EINTR)
		;
	if (!started) {
		hreport_early(log_fd, h, hst);
		if (program_pid > 0)	/* it exits at once, not started */
			orphan_wait();
		return HOLDER_LOST_STATUS;
	}
	st = -1;
	lost = hreport_lost(rec, log_fd, h, hst,
			    program_pid > 0 ? orphan_wait : NULL, &st);
	if (lost)
		return HOLDER_LOST_STATUS;
	return st < 0 ? 1 : die_like(st);
}

/* The shared record, the page and each process's buffer to the holder
 * are memfds, which RLIMIT_FSIZE limits as it does files: below their
 * size no process of the program could be served (or the record kept),
 * so --shared says so and does not start. */
static bool fsize_too_small(void)
{
	unsigned long long need = HOLDER_BUF_MIN;
	struct rlimit fl;

	if (sizeof(struct hrec) > need)
		need = sizeof(struct hrec);
	if (sizeof(struct holder_shm) > need)
		need = sizeof(struct holder_shm);
	if (getrlimit(RLIMIT_FSIZE, &fl) < 0 || fl.rlim_cur == RLIM_INFINITY ||
	    fl.rlim_cur >= need)
		return false;
	fprintf(stderr, "wtio-run: --shared needs a file size limit (ulimit -f) of at least %llu KiB for its shared memory, which the limit covers too; it is %llu KiB\n",
		(need + 1023) / 1024, (unsigned long long)fl.rlim_cur / 1024);
	return true;
}

int holder_run(char **argv, int log_fd)
{
	struct sigaction sa;
	struct front_msg m;
	struct hrec *rec;
	sigset_t mask;
	int fds[2], pidfd;
	bool started = false;
	size_t i;
	pid_t h;
	ssize_t n;

	fflush(NULL);
	if (fsize_too_small())
		return 126;
	/* what the holder has not written back, kept where its death does
	 * not take it (record.h); NULL: not known then */
	rec = hrec_create();
	/* the shared page too: its clients must hear of the holder's death */
	hshm_init();
	if (pipe2(fds, O_CLOEXEC) < 0) {
		fprintf(stderr, "wtio-run: pipe: %s\n", strerror(errno));
		return 126;
	}
	sigprocmask(SIG_SETMASK, NULL, &mask);
	/* if the holder dies, the program becomes this process's child, so
	 * that its status is still wtio-run's */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	h = fork();
	if (h < 0) {
		fprintf(stderr, "wtio-run: fork: %s\n", strerror(errno));
		return 126;
	}
	if (h == 0) {
		close(fds[0]);
		hrec_use(rec);
		holder(argv, fds[1], log_fd, &mask);
	}
	close(fds[1]);
	/* the holder's child until reaped: its pid names it */
	pidfd = (int)syscall(SYS_pidfd_open, h, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);
	for (;;) {
		n = read(fds[0], &m, sizeof(m));
		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(m))
			return holder_died(h, rec, log_fd, started);
		if (m.kind == MSG_PID) {
			program_pid = m.val;
		} else if (m.kind == MSG_STARTED) {
			program_pid = m.val;
			started = true;
		} else if (m.kind == MSG_STATUS) {
			/* processes left behind: the holder outlives this
			 * process, and a watchdog its death */
			if (rec && atomic_load(&rec->state) != HREC_ENDED)
				hreport_watch(rec, pidfd, log_fd, h);
			return die_like(m.val);
		} else {
			return m.val;
		}
	}
}
