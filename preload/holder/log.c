/* SPDX-License-Identifier: MIT */
/*
 * log.c - the holder's messages and counters. Messages go to file
 * descriptor 2, which is the program's stderr or the --log file: one
 * write per line, so that lines of several threads never mix.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

struct holder_stats hstats;
static bool debugging;
static mode_t files_umask = 022;

void hstats_umask(mode_t um)
{
	files_umask = um;
}

void hlog_init(bool debug)
{
	debugging = debug;
}

bool hlog_debugging(void)
{
	return debugging;
}

static void say(const char *fmt, va_list ap)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "wtio-holder[%d]: ", (int)getpid());

	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0) {
		/* nowhere else to say it */
	}
}

void hlog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void hdebug(const char *fmt, ...)
{
	va_list ap;

	if (!debugging)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void hstats_get(struct holder_stats *out)
{
	const uint64_t *src = (const uint64_t *)&hstats;
	uint64_t *dst = (uint64_t *)out;
	size_t i;

	for (i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

int hstats_write(const char *path)
{
	struct holder_stats s;
	static const char *const reasons[4] = { "program", "exec", "lock",
						"lease" };
	char tmp[4096];
	FILE *f;
	uint64_t all = 0;
	int i;

	/* written aside and renamed: a reader polling for the file sees it
	 * whole or not at all */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >=
	    (int)sizeof(tmp))
		return -1;
	/* the program's umask (the holder's own is 0) */
	i = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		 0666 & ~files_umask);
	f = i >= 0 ? fdopen(i, "w") : NULL;
	if (!f) {
		if (i >= 0)
			close(i);
		return -1;
	}
	hstats_get(&s);
#define P(name) fprintf(f, #name " %llu\n", (unsigned long long)s.name)
	P(clients);
	P(opens_served);
	P(opens_not_served);
	P(not_served_elsewhere);
	P(not_served_other);
	P(not_served_nofds);
	P(not_served_creds);
	/* demoted[] by enum holder_demote_reason, and their sum */
	for (i = 0; i < 4; i++) {
		fprintf(f, "demoted_%s %llu\n", reasons[i],
			(unsigned long long)s.demoted[i]);
		all += s.demoted[i];
	}
	fprintf(f, "demoted %llu\n", (unsigned long long)all);
	P(reads);
	P(writes);
	P(bytes_read);
	P(bytes_written);
	P(syncs);
	P(seeks);
	P(sizes);
	P(clients_died);
	P(dirty_lost_bytes);	/* last: the tests wait for this line */
#undef P
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}
