/* SPDX-License-Identifier: MIT */
/*
 * perfrec.c - --perf: one perf record -g per trial, so that speed work
 * starts from where the time goes. perf attaches to this process by pid
 * (every thread, those started later included).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memcg.h"
#include "perfrec.h"

static bool perf_found(void)
{
	static int found = -1;
	if (found < 0)
		found = system("command -v perf >/dev/null 2>&1") == 0;
	return found;
}

pid_t perfrec_start(const char *out)
{
	static bool told;
	char pid[24];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (!perf_found()) {
		if (!told)
			fprintf(stderr, "wtio-bench: --perf: perf is not installed (Debian: "
				"apt-get install linux-perf); no profile recorded. Per trial it "
				"would run: perf record -g -p %s -o %s\n", pid, out);
		told = true;
		return -1;
	}
	unlink(out);	/* the wait below looks for the new file */
	pid_t p = fork();
	if (p == 0) {
		/* perf's memory and its file's page cache are not the trial's:
		 * out of a kernel mode's memory cgroup before it allocates. */
		memcg_expel_self();
		execlp("perf", "perf", "record", "-g", "-q", "-p", pid, "-o", out, (char *)NULL);
		_exit(127);
	}
	/* Let it attach before the window opens: perf writes its file's
	 * header once it has; a loaded machine can take a second or more. */
	struct stat st;
	for (int i = 0; p > 0 && i < 100; i++) {
		int ws;
		if (!stat(out, &st) && st.st_size > 0)
			break;
		/* A perf that cannot record (no permission, no perf for this
		 * kernel) exits at once: say so, rather than a silent run. */
		if (waitpid(p, &ws, WNOHANG) == p) {
			fprintf(stderr, "wtio-bench: --perf: perf record -g -p %s -o %s failed (%s %d); "
				"no profile of this trial\n", pid, out,
				WIFEXITED(ws) ? "exit status" : "signal",
				WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
			return -1;
		}
		usleep(50000);
	}
	if (p > 0)
		usleep(200000);
	return p;
}

void perfrec_stop(pid_t pid)
{
	int st;

	if (pid <= 0)
		return;
	kill(pid, SIGINT);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}
