/* SPDX-License-Identifier: MIT */
/*
 * report.c - what wtio-run says when its cache holder has died: which
 * served files had data the program was acknowledged and the holder had
 * not written back (lost with it), and how much, read from the record
 * the holder kept in memory shared with wtio-run (record.c). Said by
 * wtio-run itself while it waits for the program, or, once it has
 * returned with a process of the program left behind (a daemon), by a
 * watchdog it leaves in its place, which waits for the holder's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record.h"
#include "report.h"
#include "shm.h"

static int out_fds[2] = { 2, -1 };

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[HREC_PATH + 256];
	va_list ap;
	int n, i;

	n = snprintf(buf, sizeof(buf), "wtio-run: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	for (i = 0; i < 2; i++)
		if (out_fds[i] >= 0 && write(out_fds[i], buf, (size_t)n) < 0) {
			/* nowhere else to say it */
		}
}

/*
 * The holder writes whole blocks and makes a file's size exact at its
 * sync or last close: at its death a file can be up to a block longer
 * than the program was told (zeros past its last write), or an extension
 * (ftruncate up) may not have reached the disk yet. Set the size to what
 * the program was last answered, if the path still names that file.
 * Growing is done only where nothing of the file was lost (the gap is
 * then the program's own zeros). false if the size is wrong and stays so.
 */
static bool size_set_back(struct hrec_slot *s, bool lost)
{
	int64_t want = atomic_load(&s->size);
	struct stat st;
	bool ok = false;
	int fd;

	if (want < 0)
		return true;
	/* the path still names the file, and its size is not the one told */
	if (lstat(s->path, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_dev != s->dev || (uint64_t)st.st_ino != s->ino ||
	    st.st_size == want || (st.st_size < want && lost))
		return true;
	fd = open(s->path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0 && errno == EWOULDBLOCK) {
		/* the holder's lease, on the description its clients still
		 * have open: a process of the program is left */
		say("size not exact: %s: %lld bytes where the program was told %lld; a process of the program still has it open, so it is left as it is",
		    s->path, (long long)st.st_size, (long long)want);
		return false;
	}
	if (fd >= 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != s->dev ||
			(uint64_t)st.st_ino != s->ino)) {
		close(fd);	/* replaced meanwhile: not the file any more */
		return true;
	}
	if (fd >= 0 && ftruncate(fd, want) == 0) {
		say("%s: size set to %lld bytes, as the program was last told (it was %lld: the holder's whole-block writes and its exact size at sync or close)",
		    s->path, (long long)want, (long long)st.st_size);
		ok = true;
	} else {
		say("size not exact: %s: %lld bytes on disk where the program was told %lld: %s",
		    s->path, (long long)st.st_size, (long long)want,
		    strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

void hreport_early(int log_fd, pid_t holder, int wstatus)
{
	out_fds[1] = log_fd;
	if (wstatus >= 0 && WIFSIGNALED(wstatus))
		say("the cache holder (pid %d) was killed by signal %d before the program was started: the program did not run; exit status %d",
		    (int)holder, WTERMSIG(wstatus), HOLDER_LOST_STATUS);
	else
		say("the cache holder (pid %d) died before the program was started: the program did not run; exit status %d",
		    (int)holder, HOLDER_LOST_STATUS);
}

bool hreport_lost(struct hrec *r, int log_fd, pid_t holder, int wstatus,
		  int (*settle)(void), int *settled)
{
	uint64_t total = 0, other;
	int i, files = 0, wrong = 0;

	out_fds[1] = log_fd;
	if (wstatus >= 0 && WIFSIGNALED(wstatus))
		say("the cache holder (pid %d) was killed by signal %d: calls on served files fail with EIO from now on",
		    (int)holder, WTERMSIG(wstatus));
	else
		say("the cache holder (pid %d) died: calls on served files fail with EIO from now on",
		    (int)holder);
	if (!r) {
		say("what it had not written back is not known (it kept no record)");
		return true;
	}
	for (i = 0; i < HREC_SLOTS; i++) {
		struct hrec_slot *s = &r->slot[i];
		uint64_t n;

		if (!atomic_load_explicit(&s->used, memory_order_acquire))
			continue;
		s->path[HREC_PATH - 1] = 0;
		n = hrec_unwritten(s);
		if (!n)
			continue;
		say("not written back, lost: %s: at most %llu bytes", s->path,
		    (unsigned long long)n);
		total += n;
		files++;
	}
	/* the sizes once the program's processes have let go of the files
	 * (their descriptors keep the holder's lease) */
	if (settle)
		*settled = settle();
	for (i = 0; i < HREC_SLOTS; i++) {
		struct hrec_slot *s = &r->slot[i];

		if (atomic_load_explicit(&s->used, memory_order_acquire) &&
		    !size_set_back(s, hrec_unwritten(s) != 0) &&
		    !hrec_unwritten(s))
			wrong++;
	}
	other = hrec_unwritten(&r->other);
	if (other) {
		say("not written back, lost: %llu more served files (not named): at most %llu bytes",
		    (unsigned long long)atomic_load(&r->other_files),
		    (unsigned long long)other);
		total += other;
		/* the files counted together, each, not the one slot */
		files += (int)atomic_load(&r->other_files) ?: 1;
	}
	if (!total && !wrong) {
		say("nothing was lost: every write acknowledged to the program had been written back");
		return false;
	}
	if (!total)
		say("%d file%s left with a size the program was not told; exit status %d",
		    wrong, wrong == 1 ? "" : "s", HOLDER_LOST_STATUS);
	else
		say("lost: at most %llu bytes in %d file%s%s; exit status %d",
		    (unsigned long long)total, files, files == 1 ? "" : "s",
		    wrong ? ", and sizes not exact (above)" : "",
		    HOLDER_LOST_STATUS);
	return true;
}

void hreport_watch(struct hrec *r, int pidfd, int log_fd, pid_t holder)
{
	struct pollfd pf = { .events = POLLIN };
	pid_t w;
	int sig, devnull;

	if (!r || pidfd < 0)
		return;
	w = fork();
	if (w != 0)
		return;
	/* as the holder: its end is the program's, not the terminal's */
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
			signal(sig, SIG_IGN);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
	}
	/* with --log, the caller's stderr is not kept open */
	if (log_fd >= 0)
		dup2(log_fd, 2);
	if (dup2(pidfd, 3) < 0)
		_exit(0);
	closefrom(4);
	pf.fd = 3;
	while (poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
	hshm_mark_dead();
	if (atomic_load(&r->state) != HREC_ENDED)
		hreport_lost(r, -1, holder, -1, NULL, NULL);
	_exit(0);
}
