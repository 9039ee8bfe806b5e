/* SPDX-License-Identifier: MIT */
/*
 * wtio-run - run a program with its files under the chosen paths served
 * by wtio, through libwtio-preload.so (docs/SHIM.md).
 *
 *   wtio-run [--mode=writeback|writethrough|writethrough-noserial|dontcache]
 *            [--dsync] [--paths=DIR:DIR...] [--cache-size=SIZE]
 *            [--preload=PATH] [--debug] -- PROGRAM ARGS...
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef WTIO_PRELOAD_INSTALLED
#define WTIO_PRELOAD_INSTALLED "libwtio-preload.so"
#endif

static void usage(FILE *f)
{
	fprintf(f,
"usage: wtio-run [--mode=writeback|writethrough|writethrough-noserial|dontcache]\n"
"                [--dsync] [--paths=DIR:DIR...] [--cache-size=SIZE]\n"
"                [--preload=PATH] [--debug] -- PROGRAM ARGS...\n"
"Serves the files under the paths (default: the current directory) through\n"
"wtio's user-space cache; everything else goes to the kernel untouched.\n");
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
	const char *preload = NULL, *old;
	char *ld;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (!strncmp(a, "--mode=", 7)) {
			const char *m = a + 7;

			if (strcmp(m, "writeback") && strcmp(m, "writethrough") &&
			    strcmp(m, "writethrough-noserial") &&
			    strcmp(m, "dontcache")) {
				fprintf(stderr, "wtio-run: unknown mode '%s'\n", m);
				return 2;
			}
			setenv("WTIO_MODE", m, 1);
		} else if (!strcmp(a, "--dsync")) {
			setenv("WTIO_DSYNC", "1", 1);
		} else if (!strncmp(a, "--paths=", 8)) {
			setenv("WTIO_PATHS", a + 8, 1);
		} else if (!strncmp(a, "--cache-size=", 13)) {
			setenv("WTIO_CACHE_SIZE", a + 13, 1);
		} else if (!strncmp(a, "--preload=", 10)) {
			preload = a + 10;
		} else if (!strcmp(a, "--debug")) {
			setenv("WTIO_DEBUG", "1", 1);
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (a[0] == '-') {
			fprintf(stderr, "wtio-run: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		} else {
			break;	/* the program, without a "--" */
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	/* Paths are fixed now, against this directory, so that a program
	 * that changes directory keeps the same set. */
	if (!getenv("WTIO_PATHS") || !*getenv("WTIO_PATHS")) {
		char cwd[PATH_MAX];

		if (getcwd(cwd, sizeof(cwd)))
			setenv("WTIO_PATHS", cwd, 1);
	}
	preload = find_preload(preload);
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		ld = malloc(strlen(preload) + strlen(old) + 2);
		sprintf(ld, "%s:%s", preload, old);
	} else {
		ld = strdup(preload);
	}
	setenv("LD_PRELOAD", ld, 1);
	execvp(argv[i], &argv[i]);
	fprintf(stderr, "wtio-run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
