/* SPDX-License-Identifier: MIT */
/*
 * wtio-run - run a program with its files under the chosen paths served
 * by wtio, through libwtio-preload.so (docs/SHIM.md).
 *
 *   wtio-run [--mode=writeback|writethrough|writethrough-noserial|dontcache|
 *                    adaptive]
 *            [--dsync] [--paths=DIR:DIR...] [--cache-size=SIZE]
 *            [--folio-size=SIZE] [--no-large-folios] [--preload=PATH]
 *            [--debug]
 *            [--shared [--log=FILE]]
 *            -- PROGRAM ARGS...
 *
 * --shared: one cache for every process of the program, held by a cache
 * holder that wtio-run starts (preload/holder/run.c; docs/DESIGN.md, "One
 * cache per program").
 *
 * Every value is checked before the program starts: a bad one is an error
 * (exit 2, with a message), never a silent change of what is served.
 * Exit status: the program's; 2 for a usage error or a bad value, 126 if
 * the program cannot be run, 127 if it is not found; with --shared, 125
 * if the holder died with data it had not written back, or before it
 * started the program (man/wtio-run.1).
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

#include "holder/run.h"
#include "holder_proto.h"
#include "shim_env.h"
#include "shim_size.h"

#ifndef WTIO_RUN_VERSION
#define WTIO_RUN_VERSION "unknown"
#endif

#ifndef WTIO_PRELOAD_INSTALLED
#define WTIO_PRELOAD_INSTALLED "libwtio-preload.so"
#endif

static void usage(FILE *f)
{
	fprintf(f,
"usage: wtio-run [--mode=writeback|writethrough|writethrough-noserial|dontcache|\n"
"                        adaptive]\n"
"                [--dsync] [--paths=DIR:DIR...] [--cache-size=SIZE]\n"
"                [--folio-size=SIZE] [--no-large-folios] [--preload=PATH]\n"
"                [--debug]\n"
"                [--shared [--log=FILE]]\n"
"                -- PROGRAM ARGS...\n"
"       wtio-run --help | --version\n"
"Serves the files under the paths (default: the current directory) through\n"
"wtio's user-space cache; everything else goes to the kernel untouched.\n"
"  --mode=MODE       default flags of every write (default writeback)\n"
"  --dsync           every write is also on disk at return (WTIO_DSYNC)\n"
"  --paths=DIR:...   existing directories whose files are served\n"
"  --cache-size=SIZE the cache's budget, e.g. 64M or 2G (default 128M;\n"
"                    64K to the machine's memory)\n"
"  --folio-size=SIZE the cache's unit, a power of two from 4K (default)\n"
"                    to 1M: larger suits programs that stream files\n"
"                    (cp, dd, tar), 4K those that write small blocks\n"
"  --no-large-folios every file in folios of --folio-size; by default\n"
"                    each file chooses: the length of the read or write\n"
"                    that finds none of it cached, rounded down to a\n"
"                    power of two, from the folio size to 16 x it (1M)\n"
"  --preload=PATH    the libwtio-preload.so to use\n"
"  --debug           one line on stderr per decision, naming the file\n"
"  --shared          one cache for every process of the program, in a\n"
"                    cache holder that lives until its last process ends\n"
"  --log=FILE        the holder's messages go to FILE (appended), not to\n"
"                    stderr (a daemon's stderr would stay open)\n"
"Exit status: the program's; 2 bad usage or value; 126 cannot run the\n"
"program; 127 program not found; 125 (--shared) the holder died with\n"
"data it had not written back, or before the program started. See\n"
"wtio-run(1).\n");
}

static int bad(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "wtio-run: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 2;
}

static bool valid_mode(const char *m)
{
	return !strcmp(m, "writeback") || !strcmp(m, "writethrough") ||
	       !strcmp(m, "writethrough-noserial") || !strcmp(m, "dontcache") ||
	       !strcmp(m, "adaptive");
}

/* Every element an existing directory; the result is absolute (fixed
 * now, so that a program changing directory keeps the same set).
 * NULL after a message on a bad element. */
static char *check_paths(const char *list)
{
	size_t cap = strlen(list) * 2 + PATH_MAX, len = 0;
	char *out = malloc(cap), *copy = strdup(list), *save = NULL, *tok;
	int n = 0;

	if (!out || !copy)
		return NULL;
	out[0] = 0;
	for (tok = strtok_r(copy, ":", &save); tok;
	     tok = strtok_r(NULL, ":", &save)) {
		char res[PATH_MAX];
		struct stat st;
		size_t l;

		if (stat(tok, &st) < 0) {
			bad("--paths: %s: %s", tok, strerror(errno));
			goto fail;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad("--paths: %s: %s", tok, "not a directory");
			goto fail;
		}
		if (!realpath(tok, res)) {
			bad("--paths: %s: %s", tok, strerror(errno));
			goto fail;
		}
		l = strlen(res);
		if (len + l + 2 > cap) {
			char *bigger = realloc(out, cap = (len + l + 2) * 2);

			if (!bigger)
				goto fail;
			out = bigger;
		}
		if (n++)
			out[len++] = ':';
		memcpy(out + len, res, l + 1);
		len += l;
	}
	if (!n) {
		bad("--paths: %s%s", "no directory given", "");
		goto fail;
	}
	free(copy);
	return out;
fail:
	free(copy);
	free(out);
	return NULL;
}

/* The preload library: --preload, $WTIO_PRELOAD, next to this program
 * (build tree), or the installed one. */
static const char *find_preload(const char *opt)
{
	static char buf[PATH_MAX], res[PATH_MAX];
	char self[PATH_MAX - 64];
	ssize_t n;
	char *slash;

	if (opt)
		return opt;
	if (getenv("WTIO_PRELOAD") && *getenv("WTIO_PRELOAD"))
		return getenv("WTIO_PRELOAD");
	/* (each candidate below is checked by the caller too) */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, sizeof(buf), "%s/libwtio-preload.so", self);
			if (access(buf, R_OK) == 0)
				return buf;
			snprintf(buf, sizeof(buf), "%s/../lib/libwtio-preload.so", self);
			if (access(buf, R_OK) == 0)
				return realpath(buf, res) ? res : buf;
		}
	}
	return WTIO_PRELOAD_INSTALLED;
}

int main(int argc, char **argv)
{
	const char *preload = NULL, *old, *why, *v, *log = NULL;
	bool shared = false;
	char *ld, *paths;
	uint64_t size = 128ull << 20;
	uint32_t folio = 4096;
	int i, log_fd = -1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strncmp(a, "--mode=", 7)) {
			const char *m = a + 7;

			if (!valid_mode(m))
				return bad("unknown mode '%s'%s (writeback, writethrough, writethrough-noserial, dontcache, adaptive)",
					   m, "");
			setenv("WTIO_MODE", m, 1);
		} else if (!strcmp(a, "--dsync")) {
			setenv("WTIO_DSYNC", "1", 1);
		} else if (!strncmp(a, "--paths=", 8)) {
			if (!a[8])
				return bad("--paths=: %s%s", "no directory given", "");
			setenv("WTIO_PATHS", a + 8, 1);
		} else if (!strncmp(a, "--cache-size=", 13)) {
			if (shim_parse_size(a + 13, &size, &why))
				return bad("--cache-size=%s: %s", a + 13, why);
			setenv("WTIO_CACHE_SIZE", a + 13, 1);
		} else if (!strncmp(a, "--folio-size=", 13)) {
			if (shim_parse_folio_size(a + 13, &folio, &why))
				return bad("--folio-size=%s: %s", a + 13, why);
			setenv("WTIO_FOLIO_SIZE", a + 13, 1);
		} else if (!strcmp(a, "--no-large-folios")) {
			setenv("WTIO_LARGE_FOLIOS", "0", 1);
		} else if (!strncmp(a, "--preload=", 10)) {
			preload = a + 10;
			if (!*preload)
				return bad("--preload=: %s%s", "no library given", "");
		} else if (!strcmp(a, "--debug")) {
			setenv("WTIO_DEBUG", "1", 1);
		} else if (!strcmp(a, "--shared")) {
			shared = true;
		} else if (!strncmp(a, "--log=", 6)) {
			log = a + 6;
			if (!*log)
				return bad("--log=: %s%s", "no file given", "");
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--version")) {
			printf("wtio-run %s (libwtio %d.%d)\n", WTIO_RUN_VERSION,
			       WTIO_VERSION_MAJOR, WTIO_VERSION_MINOR);
			return 0;
		} else if (a[0] == '-') {
			fprintf(stderr, "wtio-run: unknown option '%s' (or a value missing its '=')\n", a);
			usage(stderr);
			return 2;
		} else {
			break;	/* the program, without a "--" */
		}
	}
	if (i >= argc) {
		fprintf(stderr, "wtio-run: no program to run\n");
		usage(stderr);
		return 2;
	}
	if (log && !shared)
		return bad("--log=%s: %s", log, "only with --shared (the holder's messages)");
	if (log) {
		log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC |
			      O_NOCTTY, 0666);
		if (log_fd < 0)
			return bad("--log=%s: %s", log, strerror(errno));
	}
	/* The environment's values (an option above sets them too) get the
	 * same checks as the options: the library would refuse them later,
	 * serving nothing, which is the silent change this avoids. */
	if ((v = getenv("WTIO_MODE")) && *v && !valid_mode(v))
		return bad("WTIO_MODE=%s: unknown mode%s", v, "");
	{
		const char *want, *sw = shim_env_bad_switch(&want);
		char what[128];

		if (sw) {
			snprintf(what, sizeof(what), "%s=%s", sw, getenv(sw));
			return bad("%s: takes %s", what, want);
		}
	}
	if ((v = getenv("WTIO_CACHE_SIZE")) && *v &&
	    shim_parse_size(v, &size, &why))
		return bad("WTIO_CACHE_SIZE=%s: %s", v, why);
	if ((v = getenv("WTIO_FOLIO_SIZE")) && *v &&
	    shim_parse_folio_size(v, &folio, &why))
		return bad("WTIO_FOLIO_SIZE=%s: %s", v, why);
	if (shim_check_budget(size, folio, &why)) {
		char both[64];

		snprintf(both, sizeof(both), "%llu and %u",
			 (unsigned long long)size, folio);
		return bad("cache size and folio size %s: %s", both, why);
	}
	/* Paths are fixed now, against this directory, so that a program
	 * that changes directory keeps the same set. */
	if (!getenv("WTIO_PATHS") || !*getenv("WTIO_PATHS")) {
		char cwd[PATH_MAX];

		if (!getcwd(cwd, sizeof(cwd)))
			return bad("the current directory: %s%s", strerror(errno), "");
		setenv("WTIO_PATHS", cwd, 1);
	}
	paths = check_paths(getenv("WTIO_PATHS"));
	if (!paths)
		return 2;
	setenv("WTIO_PATHS", paths, 1);
	free(paths);
	preload = find_preload(preload);
	if (access(preload, R_OK) != 0)
		return bad("the preload library %s: %s", preload, strerror(errno));
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		ld = malloc(strlen(preload) + strlen(old) + 2);
		if (ld)
			sprintf(ld, "%s:%s", preload, old);
	} else {
		ld = strdup(preload);
	}
	/* setenv copies it: the string is ours to free (a --shared run
	 * returns here, and ASan's leak check ran over it at exit) */
	if (!ld || setenv("LD_PRELOAD", ld, 1) < 0) {
		free(ld);
		return bad("LD_PRELOAD: %s%s", strerror(ENOMEM), "");
	}
	free(ld);
	if (shared)
		return holder_run(&argv[i], log_fd);
	/* per-process caches, even inside a program run with --shared */
	unsetenv(HOLDER_ENV);
	execvp(argv[i], &argv[i]);
	fprintf(stderr, "wtio-run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
