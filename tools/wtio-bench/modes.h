/* SPDX-License-Identifier: MIT */
/*
 * modes.h - the I/O modes wtio-bench compares: the kernel's (plain system
 * calls) and wtio's (the library's flags).
 */
#ifndef WTIO_BENCH_MODES_H
#define WTIO_BENCH_MODES_H

#include <stdbool.h>

/* RWF_DONTCACHE (Linux 6.14). Not in every libc's headers yet. */
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

enum mode_family {
	FAMILY_KERNEL,
	FAMILY_WTIO,
};

struct mode_def {
	const char *name;
	enum mode_family family;
	int oflags;		/* kernel: extra open(2) flags (O_DIRECT) */
	int rwf;		/* kernel: RWF_* for every read and write */
	bool sfr_after_write;	/* kernel: sync_file_range(WRITE) after each write */
	unsigned int wflags;	/* wtio: flags of every write */
	unsigned int rflags;	/* wtio: flags of every read */
	const char *desc;
	unsigned int cfgflags;	/* wtio: WTIO_CONFIG_* of the context */
};

extern const struct mode_def mode_table[];
extern const int nr_mode_table;

/* Index of a mode by name, or -1. */
int mode_find(const char *name);

#endif
