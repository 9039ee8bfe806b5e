/* SPDX-License-Identifier: MIT */
/*
 * raidtarget.c - --raid: the user-space RAID under the wtio modes, one volume
 * for the whole run, its member files removed at the end (and on Ctrl-C),
 * its per-member I/O counts printed after each mode.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "raidtarget.h"
#include "raid_io.h"

static struct raid_vol *vol;
static struct raid_files *files;
static uint32_t geo_su, geo_sw;	/* the stripe geometry wtio is told */
static bool chunk_io;		/* and max_io_size = the chunk */

int raid_spec_opt(const struct opt_def *d, void *base, const char *val,
		  char *err, size_t errlen)
{
	struct raid_spec *rs = (void *)((char *)base + d->off);
	char tmp[64], *c1, *c2;
	unsigned long long lvl, n;
	uint64_t chunk;

	snprintf(tmp, sizeof(tmp), "%s", val);
	c1 = strchr(tmp, ',');
	c2 = c1 ? strchr(c1 + 1, ',') : NULL;
	if (!c2)
		goto bad;
	*c1 = *c2 = 0;
	if (parse_uint(tmp, 6, &lvl) || (lvl != 5 && lvl != 6) ||
	    parse_uint(c1 + 1, RAID_MAX_DISKS, &n) || n < (lvl == 5 ? 3 : 4) ||
	    parse_size(c2 + 1, &chunk) || chunk < 4096 || chunk > (16u << 20) ||
	    (chunk & (chunk - 1)))
		goto bad;
	rs->level = (unsigned int)lvl;
	rs->disks = (unsigned int)n;
	rs->chunk = chunk;
	return 0;
bad:
	snprintf(err, errlen, "--%s: '%s' is not LEVEL,DISKS,CHUNK: level 5 "
		 "(3 to %d disks) or 6 (4 to %d), chunk a power of two from "
		 "4k to 16M (example: 5,4,64k)", d->name, val, RAID_MAX_DISKS,
		 RAID_MAX_DISKS);
	return -1;
}

int bench_raid_setup(const struct raid_spec *rs, bool su_stripe, bool cut_chunk,
		     const char *dir, char *desc, size_t desclen)
{
	const char *mdir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : dir;
	char prefix[64];
	unsigned int k;
	int ret;

	snprintf(prefix, sizeof(prefix), "wtio-bench-raid.%d", (int)getpid());
	ret = raid_create(mdir, prefix, (int)rs->level, rs->disks,
			  (uint32_t)rs->chunk, &vol);
	if (!ret)
		ret = raid_files_create(vol, &files);
	if (ret) {
		fprintf(stderr, "wtio-bench: --raid: cannot make the volume in "
			"%s: %s\n", mdir, strerror(-ret));
		raid_destroy(vol, 1);
		vol = NULL;
		return -1;
	}
	for (k = 0; k < rs->disks; k++)
		cleanup_add_file(raid_member_path(vol, k));
	chunk_io = cut_chunk;
	geo_sw = cut_chunk ? raid_chunk(vol) : (uint32_t)raid_stripe_width(vol);
	geo_su = su_stripe ? geo_sw : raid_chunk(vol);
	/* Not mkfs's su=,sw=: no filesystem is made on it. The geometry
	 * wtio is told is in the header's "stripe geometry in use" line. */
	snprintf(desc, desclen, "user-space raid%u,%u,%lluk, wtio su/sw "
		 "%uk/%uk%s", rs->level, rs->disks,
		 (unsigned long long)rs->chunk >> 10, geo_su >> 10, geo_sw >> 10,
		 cut_chunk ? " max-io" : "");
	fprintf(stderr, "wtio-bench: --raid: user-space RAID-%u over %u "
		"member files in %s (%s), chunk %llu KiB, stripe %llu KiB; "
		"wtio is told stripe unit %u KiB, width %u KiB%s. Kernel modes "
		"cannot run on it.\n",
		rs->level, rs->disks, mdir, raid_direct(vol) ? "O_DIRECT" :
		"buffered: no O_DIRECT there", (unsigned long long)rs->chunk >> 10,
		(unsigned long long)raid_stripe_width(vol) >> 10, geo_su >> 10,
		geo_sw >> 10, cut_chunk ? ", max_io_size one chunk (one chunk per "
		"I/O)" : "");
	return 0;
}

bool bench_raid_active(void)
{
	return vol != NULL;
}

int bench_raid_ctx_create(const struct wtio_config *cfg,
			  struct wtio_ctx **ctxp)
{
	struct wtio_config c = *cfg;

	c.stripe_unit = geo_su;
	c.stripe_width = geo_sw;
	if (chunk_io)
		c.max_io_size = geo_sw;
	return raid_ctx_create(&c, files, ctxp);
}

void bench_raid_stats_reset(void)
{
	if (vol)
		raid_stats_reset(vol);
}

void bench_raid_report(const char *mode)
{
	struct raid_member_stats ms[RAID_MAX_DISKS];
	struct raid_vol_stats vs;
	uint64_t r = 0, w = 0, rb = 0, wb = 0;
	unsigned int k;

	if (!vol)
		return;
	raid_stats(vol, ms, &vs);
	for (k = 0; k < raid_disks(vol); k++) {
		r += ms[k].reads;
		w += ms[k].writes;
		rb += ms[k].read_bytes;
		wb += ms[k].write_bytes;
	}
	fprintf(stderr, "raid: %s: member reads %llu (%llu KiB), writes %llu "
		"(%llu KiB); stripes written whole %llu, in part %llu "
		"(rows: %llu read-modify-write, %llu reconstruct-write, %llu "
		"whole)\n", mode, (unsigned long long)r,
		(unsigned long long)rb >> 10, (unsigned long long)w,
		(unsigned long long)wb >> 10,
		(unsigned long long)vs.full_stripe_writes,
		(unsigned long long)vs.partial_stripe_writes,
		(unsigned long long)vs.rmw_rows,
		(unsigned long long)vs.rcw_rows,
		(unsigned long long)vs.full_rows);
}
