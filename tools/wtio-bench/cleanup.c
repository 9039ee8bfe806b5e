/* SPDX-License-Identifier: MIT */
/* cleanup.c - the registry of temporary files. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

static char **files;
static size_t nr_files, cap_files;
#define MAX_FINALS 4
static void (*finals[MAX_FINALS])(void);
static int nr_finals;

void cleanup_add_file(const char *path)
{
	for (size_t i = 0; i < nr_files; i++)
		if (files[i] && !strcmp(files[i], path))
			return;
	if (nr_files == cap_files) {
		size_t nc = cap_files ? cap_files * 2 : 64;
		char **nf = realloc(files, nc * sizeof(*nf));
		if (!nf)
			return;
		files = nf;
		cap_files = nc;
	}
	files[nr_files] = strdup(path);
	if (files[nr_files])
		nr_files++;
}

void cleanup_remove_file(const char *path)
{
	for (size_t i = 0; i < nr_files; i++)
		if (files[i] && !strcmp(files[i], path)) {
			unlink(files[i]);
			free(files[i]);
			files[i] = NULL;
		}
}

void cleanup_remove_created(const char *dir, unsigned long long count)
{
	char path[PATH_MAX + 32];

	for (unsigned long long i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/f%llu", dir, i);
		unlink(path);
	}
	rmdir(dir);
}

void cleanup_add_final(void (*fn)(void))
{
	for (int i = 0; i < nr_finals; i++)
		if (finals[i] == fn)
			return;
	if (nr_finals < MAX_FINALS)
		finals[nr_finals++] = fn;
}

void cleanup_all(bool keep)
{
	for (size_t i = 0; i < nr_files; i++) {
		if (files[i] && !keep)
			unlink(files[i]);
		free(files[i]);
		files[i] = NULL;
	}
	nr_files = 0;
	while (nr_finals > 0)
		finals[--nr_finals]();
}
