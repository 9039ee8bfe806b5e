/* SPDX-License-Identifier: MIT */
/*
 * raidtarget.h - wtio-bench's RAID targets: --raid (the user-space RAID-5/6 of
 * bench/raid as the wtio modes' backend; kernel modes cannot see it) and
 * --md-raid (a real md array over loop devices with XFS on it, where the
 * kernel has md; every mode runs there).
 */
#ifndef WTIO_BENCH_RAIDTARGET_H
#define WTIO_BENCH_RAIDTARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "optparse.h"
#include "wtio.h"

struct raid_spec {
	unsigned int level;	/* 0: not asked for */
	unsigned int disks;
	uint64_t chunk;
};

/* Option callback: "LEVEL,DISKS,CHUNK" into the struct raid_spec at
 * d->off in base. */
int raid_spec_opt(const struct opt_def *d, void *base, const char *val,
		  char *err, size_t errlen);

/*
 * --raid: make the volume (members in /dev/shm, else in dir) for the whole
 * run. wtio is told stripe unit = the chunk and width = the whole stripe
 * (what XFS on md reports); su_stripe: the unit is the whole stripe too
 * (the reference's io_opt; the same cut, as wtio aligns to the width);
 * cut_chunk: width and max_io_size one chunk, so that every I/O is one
 * chunk at most (every write a partial stripe). Describes the geometry in
 * desc. 0 or -1 (message printed).
 */
int bench_raid_setup(const struct raid_spec *rs, bool su_stripe, bool cut_chunk,
		     const char *dir, char *desc, size_t desclen);
bool bench_raid_active(void);
/* wtio_ctx_create over the volume. */
int bench_raid_ctx_create(const struct wtio_config *cfg,
			  struct wtio_ctx **ctxp);
/* Zero the member counters (a mode starts) / print them (it ended). */
void bench_raid_stats_reset(void);
void bench_raid_report(const char *mode);

/* --md-raid (mdraid.c): an mdadm array of about size bytes over loop
 * devices, XFS on it, mounted; its mount point into dir. 0 or -1 (message
 * printed; a kernel without md says so). */
int mdraid_setup(const struct raid_spec *rs, uint64_t size, char *dir,
		 size_t dirlen);

#endif
