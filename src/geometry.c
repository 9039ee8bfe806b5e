/* SPDX-License-Identifier: MIT */
/*
 * geometry.c - what the file's filesystem and device say about alignment.
 *
 * Sources, in order of trust:
 *  - statx(STATX_DIOALIGN | STATX_WRITE_ATOMIC) for direct I/O alignment
 *    and untorn write limits;
 *  - the device's logical block size in sysfs when statx does not know the
 *    DIO alignment, else 4096;
 *  - XFS_IOC_FSGEOMETRY sunit/swidth for the stripe on XFS, else the
 *    backing device's minimum_io_size / optimal_io_size in sysfs.
 *
 * Debian 12's kernel headers predate STATX_WRITE_ATOMIC, and glibc's struct
 * statx may lack the newer fields, so this file carries its own copy of the
 * kernel's struct statx layout and calls the system call directly. The XFS
 * geometry ioctl is defined locally as well (its ABI is fixed): the
 * xfslibs-dev headers drag in <uuid/uuid.h> and a large namespace for one
 * structure.
 */
#include "geometry.h"
#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#define GEO_DEFAULT_ALIGN 4096u
#define GEO_MIN_ALIGN 512u
/* Anything larger than this from sysfs or statx is not believed. */
#define GEO_MAX_ALIGN (1u << 24)
/* wtio's own cap on a file's size; it also bounds the size arithmetic. */
#define GEO_MAX_FILE_SIZE ((int64_t)1 << 62)

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

/* statx mask bits (kernel values), defined here for older headers. */
#define WTIO_STATX_BASIC_STATS 0x000007ffU
#define WTIO_STATX_DIOALIGN 0x00002000U
#define WTIO_STATX_WRITE_ATOMIC 0x00010000U
#define WTIO_STATX_MNT_ID_UNIQUE 0x00004000U
/* What inode set-up needs from the call: type, mode, inode, size. */
#define WTIO_STATX_IDENTITY 0x00000303U

/* The kernel's struct statx (include/uapi/linux/stat.h), 256 bytes. */
struct wtio_statx_timestamp {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t __reserved;
};

struct wtio_statx {
	/* 0x00 */
	uint32_t stx_mask;
	uint32_t stx_blksize;
	uint64_t stx_attributes;
	/* 0x10 */
	uint32_t stx_nlink;
	uint32_t stx_uid;
	uint32_t stx_gid;
	uint16_t stx_mode;
	uint16_t __spare0[1];
	/* 0x20 */
	uint64_t stx_ino;
	uint64_t stx_size;
	uint64_t stx_blocks;
	uint64_t stx_attributes_mask;
	/* 0x40 */
	struct wtio_statx_timestamp stx_atime;
	struct wtio_statx_timestamp stx_btime;
	struct wtio_statx_timestamp stx_ctime;
	struct wtio_statx_timestamp stx_mtime;
	/* 0x80 */
	uint32_t stx_rdev_major;
	uint32_t stx_rdev_minor;
	uint32_t stx_dev_major;
	uint32_t stx_dev_minor;
	/* 0x90 */
	uint64_t stx_mnt_id;
	uint32_t stx_dio_mem_align;
	uint32_t stx_dio_offset_align;
	/* 0xa0 */
	uint64_t stx_subvol;
	uint32_t stx_atomic_write_unit_min;
	uint32_t stx_atomic_write_unit_max;
	/* 0xb0 */
	uint32_t stx_atomic_write_segments_max;
	uint32_t stx_dio_read_offset_align;
	uint32_t stx_atomic_write_unit_max_opt;
	uint32_t __spare2[1];
	/* 0xc0 */
	uint64_t __spare3[8];
	/* 0x100 */
};

_Static_assert(sizeof(struct wtio_statx) == 0x100, "struct statx layout");
_Static_assert(offsetof(struct wtio_statx, stx_dio_mem_align) == 0x98,
	       "struct statx layout");
_Static_assert(offsetof(struct wtio_statx, stx_atomic_write_unit_min) == 0xa8,
	       "struct statx layout");
_Static_assert(offsetof(struct wtio_statx, stx_atomic_write_segments_max) == 0xb0,
	       "struct statx layout");

/* XFS (fs/xfs/libxfs/xfs_fs.h). */
#define WTIO_XFS_SUPER_MAGIC 0x58465342

/* Output of XFS_IOC_FSGEOMETRY_V4 (older kernels), and the first part
 * of the v5 one. */
struct wtio_xfs_fsop_geom_v4 {
	uint32_t blocksize;
	uint32_t rtextsize;
	uint32_t agblocks;
	uint32_t agcount;
	uint32_t logblocks;
	uint32_t sectsize;
	uint32_t inodesize;
	uint32_t imaxpct;
	uint64_t datablocks;
	uint64_t rtblocks;
	uint64_t rtextents;
	uint64_t logstart;
	unsigned char uuid[16];
	uint32_t sunit;		/* stripe unit, fs blocks */
	uint32_t swidth;	/* stripe width, fs blocks */
	int32_t version;
	uint32_t flags;
	uint32_t logsectsize;
	uint32_t rtsectsize;
	uint32_t dirblocksize;
	uint32_t logsunit;
};

/* Output of XFS_IOC_FSGEOMETRY (v5, Linux >= 5.1). */
struct wtio_xfs_fsop_geom {
	struct wtio_xfs_fsop_geom_v4 v4;
	uint32_t sick;
	uint32_t checked;
	uint64_t reserved[17];
};

_Static_assert(sizeof(struct wtio_xfs_fsop_geom) == 256, "xfs_fsop_geom layout");
_Static_assert(sizeof(struct wtio_xfs_fsop_geom_v4) == 112,
	       "xfs_fsop_geom_v4 layout");
_Static_assert(offsetof(struct wtio_xfs_fsop_geom, v4.sunit) == 80,
	       "xfs_fsop_geom layout");

#define WTIO_XFS_IOC_FSGEOMETRY_V4 _IOR('X', 124, struct wtio_xfs_fsop_geom_v4)
#define WTIO_XFS_IOC_FSGEOMETRY _IOR('X', 126, struct wtio_xfs_fsop_geom)

static int geo_statx(int fd, struct wtio_statx *stx)
{
#ifdef SYS_statx
	memset(stx, 0, sizeof(*stx));
	if (wtio_sys_syscall(SYS_statx, fd, "", AT_EMPTY_PATH,
			     WTIO_STATX_BASIC_STATS | WTIO_STATX_DIOALIGN |
			     WTIO_STATX_WRITE_ATOMIC | WTIO_STATX_MNT_ID_UNIQUE,
			     stx) == 0)
		return 0;
	return -errno;
#else
	(void)fd;
	(void)stx;
	return -ENOSYS;
#endif
}

static int is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* Round up to a power of two, at least GEO_MIN_ALIGN. 0 stays 0. */
static uint32_t align_fix(uint64_t v)
{
	uint64_t p = GEO_MIN_ALIGN;

	if (v == 0)
		return 0;
	if (v > GEO_MAX_ALIGN)
		return 0;
	while (p < v)
		p <<= 1;
	return (uint32_t)p;
}

/* Read one unsigned decimal number from a sysfs file. */
static int read_sysfs_u64(const char *path, uint64_t *val)
{
	char buf[64];
	unsigned long long v;
	char *end;
	ssize_t n;
	int fd;

	fd = wtio_sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = wtio_sys_read(fd, buf, sizeof(buf) - 1);
	wtio_sys_close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	*val = v;
	return 0;
}

/*
 * Read queue/<attr> for block device maj:min; a partition has no queue/
 * of its own, so its parent's is used.
 */
static int read_queue_attr(unsigned int maj, unsigned int min,
			   const char *attr, uint64_t *val)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s",
		 maj, min, attr);
	if (read_sysfs_u64(path, val) == 0)
		return 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s",
		 maj, min, attr);
	return read_sysfs_u64(path, val);
}

/*
 * Stripe from XFS: sunit and swidth are in filesystem blocks. Returns 1
 * when a stripe was found.
 */
static int stripe_from_xfs(int fd, struct wtio_geometry *geo)
{
	struct wtio_xfs_fsop_geom g5;
	struct wtio_xfs_fsop_geom_v4 *g = &g5.v4;
	uint64_t unit, width;

	memset(&g5, 0, sizeof(g5));
	if (wtio_sys_ioctl(fd, WTIO_XFS_IOC_FSGEOMETRY, &g5) != 0) {
		memset(&g5, 0, sizeof(g5));
		if (wtio_sys_ioctl(fd, WTIO_XFS_IOC_FSGEOMETRY_V4, g) != 0)
			return 0;
	}
	if (g->blocksize == 0 || g->sunit == 0)
		return 0;
	unit = (uint64_t)g->sunit * g->blocksize;
	width = (uint64_t)g->swidth * g->blocksize;
	if (width < unit)
		width = unit;
	if (unit > UINT32_MAX || width > UINT32_MAX)
		return 0;
	geo->stripe_unit = (uint32_t)unit;
	geo->stripe_width = (uint32_t)width;
	geo->stripe_source = "xfs";
	return 1;
}

/*
 * Stripe from the block device's I/O hints. A minimum_io_size equal to
 * the logical block size is no stripe, and without an optimal_io_size
 * there is no width to align to. Returns 1 when a stripe was found.
 */
static int stripe_from_sysfs(unsigned int maj, unsigned int min,
			     struct wtio_geometry *geo)
{
	uint64_t lbs = 0, min_io = 0, opt_io = 0;

	if (read_queue_attr(maj, min, "minimum_io_size", &min_io) != 0 ||
	    read_queue_attr(maj, min, "optimal_io_size", &opt_io) != 0)
		return 0;
	if (read_queue_attr(maj, min, "logical_block_size", &lbs) != 0)
		lbs = GEO_MIN_ALIGN;
	if (opt_io == 0 || min_io <= lbs)
		return 0;
	if (opt_io < min_io || opt_io % min_io != 0)
		return 0;
	if (min_io > UINT32_MAX || opt_io > UINT32_MAX)
		return 0;
	geo->stripe_unit = (uint32_t)min_io;
	geo->stripe_width = (uint32_t)opt_io;
	geo->stripe_source = "sysfs";
	return 1;
}

/* A stat of the file from fstat, for the fields statx did not give. */
static int geo_fstat(int fd, struct wtio_file_stat *st)
{
	struct stat kst;

	if (wtio_sys_fstat(fd, &kst) != 0)
		return -errno;
	st->mode = kst.st_mode;
	st->dev = kst.st_dev;
	st->ino = kst.st_ino;
	st->size = kst.st_size;
	st->blocks = (uint64_t)kst.st_blocks;
	return 0;
}

int wtio_geometry_stat(int fd, struct wtio_file_stat *st)
{
	struct wtio_statx stx;
	int ret;

	memset(st, 0, sizeof(*st));
	if (fd < 0)
		return -EBADF;
	ret = geo_statx(fd, &stx);
	if (ret == -ENOSYS || ret == -EPERM) {
		/* Old kernel or a seccomp filter: fstat still works. */
		struct stat kst;

		if (wtio_sys_fstat(fd, &kst) != 0)
			return -errno;
		memset(&stx, 0, sizeof(stx));
		stx.stx_mask = WTIO_STATX_BASIC_STATS;
		stx.stx_mode = (uint16_t)kst.st_mode;
		stx.stx_ino = kst.st_ino;
		stx.stx_size = (uint64_t)kst.st_size;
		stx.stx_blocks = (uint64_t)kst.st_blocks;
		if (kst.st_blksize > 0)
			stx.stx_blksize = (uint32_t)kst.st_blksize;
		stx.stx_dev_major = major(kst.st_dev);
		stx.stx_dev_minor = minor(kst.st_dev);
		stx.stx_rdev_major = major(kst.st_rdev);
		stx.stx_rdev_minor = minor(kst.st_rdev);
	} else if (ret) {
		return ret;
	}
	st->mask = stx.stx_mask;
	st->mode = stx.stx_mode;
	st->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	st->ino = stx.stx_ino;
	st->size = (int64_t)stx.stx_size;
	st->blocks = stx.stx_blocks;
	/* A filesystem may leave basic fields out of statx: fstat has them. */
	if ((stx.stx_mask & WTIO_STATX_IDENTITY) != WTIO_STATX_IDENTITY) {
		ret = geo_fstat(fd, st);
		if (ret)
			return ret;
	}
	st->blksize = stx.stx_blksize;
	if (stx.stx_mask & WTIO_STATX_DIOALIGN) {
		st->dio_mem_align = stx.stx_dio_mem_align;
		st->dio_offset_align = stx.stx_dio_offset_align;
	}
	if (stx.stx_mask & WTIO_STATX_WRITE_ATOMIC) {
		st->atomic_unit_min = stx.stx_atomic_write_unit_min;
		st->atomic_unit_max = stx.stx_atomic_write_unit_max;
		st->atomic_segments_max = stx.stx_atomic_write_segments_max;
	}
	if (stx.stx_mask & WTIO_STATX_MNT_ID_UNIQUE)
		st->mnt_id = stx.stx_mnt_id;
	/* The block device whose queue limits apply. */
	if (S_ISBLK(st->mode)) {
		st->bdev_major = stx.stx_rdev_major;
		st->bdev_minor = stx.stx_rdev_minor;
	} else if (S_ISREG(st->mode) || S_ISDIR(st->mode)) {
		/* Major 0 is an anonymous device (tmpfs, btrfs, NFS, ...). */
		st->bdev_major = stx.stx_dev_major;
		st->bdev_minor = stx.stx_dev_minor;
	}
	return 0;
}

/*
 * The largest size a file may have: the filesystem's s_maxbytes for it
 * (ext4 gives files without extents a smaller one). lseek(SEEK_SET)
 * accepts an offset up to exactly that and no further (vfs_setpos under
 * generic_file_llseek_size, with the limit the write checks use), so a
 * binary search finds it: about 63 lseeks, on our own descriptor, whose
 * position no I/O uses (all of it is positional). pathconf
 * (_PC_FILESIZEBITS) cannot tell: it says 64 on ext4, whose limit is
 * 16 TiB - 4 KiB. A filesystem whose lseek refuses even 0 gets wtio's
 * own cap, 2^62, which also bounds the size arithmetic.
 */
static bool seek_ok(int fd, int64_t off)
{
	return wtio_sys_lseek(fd, off, SEEK_SET) == off;
}

static int64_t max_bytes_search(int fd)
{
	int64_t lo = 0, hi = GEO_MAX_FILE_SIZE;

	if (!seek_ok(fd, 0) || seek_ok(fd, hi))
		return hi;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;

		if (seek_ok(fd, mid))
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * Whether the search would find hint. The search rests on lseek
 * accepting every offset up to the limit and none past it; on that same
 * ground hint is the answer exactly when hint is accepted and hint + 1
 * is not (or, for the cap, when the search returns the cap at once).
 */
static bool max_bytes_is(int fd, int64_t hint)
{
	if (hint >= GEO_MAX_FILE_SIZE)
		return hint == GEO_MAX_FILE_SIZE &&
		       (seek_ok(fd, GEO_MAX_FILE_SIZE) || !seek_ok(fd, 0));
	return hint >= 0 && seek_ok(fd, hint) && !seek_ok(fd, hint + 1);
}

int64_t wtio_geometry_max_bytes(int fd, int64_t hint)
{
	int64_t v = hint > 0 && max_bytes_is(fd, hint) ? hint :
		    max_bytes_search(fd);

	wtio_sys_lseek(fd, 0, SEEK_SET);
	return v;
}

void wtio_geometry_fs(int fd, const struct wtio_file_stat *st,
		      struct wtio_fs_geometry *fs)
{
	unsigned int maj = st->bdev_major, min = st->bdev_minor;
	struct wtio_geometry g;
	struct statfs sfs;
	uint64_t lbs = 0;

	memset(fs, 0, sizeof(*fs));
	fs->stripe_source = "none";
	if (maj && read_queue_attr(maj, min, "logical_block_size", &lbs) == 0)
		fs->lbs_align = align_fix(lbs);
	/* Stripe: XFS knows best; else the device's I/O hints. */
	memset(&g, 0, sizeof(g));
	g.stripe_source = "none";
	if (fstatfs(fd, &sfs) == 0) {
		fs->max_bytes_per_fs =
			(unsigned long)sfs.f_type == WTIO_XFS_SUPER_MAGIC;
		fs->eof_punch_ignored =
			(unsigned long)sfs.f_type == EXT4_SUPER_MAGIC;
	}
	if (!(fs->max_bytes_per_fs && stripe_from_xfs(fd, &g)) && maj)
		stripe_from_sysfs(maj, min, &g);
	fs->stripe_unit = g.stripe_unit;
	fs->stripe_width = g.stripe_width;
	fs->stripe_source = g.stripe_source;
}

void wtio_geometry_combine(const struct wtio_file_stat *st,
			   const struct wtio_fs_geometry *fs,
			   struct wtio_geometry *geo)
{
	uint32_t mem = align_fix(st->dio_mem_align);
	uint32_t off = align_fix(st->dio_offset_align);

	memset(geo, 0, sizeof(*geo));
	geo->blksize = st->blksize ? st->blksize : GEO_DEFAULT_ALIGN;
	/* Direct I/O alignment: statx's, else the device's logical block
	 * size, else 4096. */
	if (!mem || !off) {
		mem = fs->lbs_align ? fs->lbs_align : GEO_DEFAULT_ALIGN;
		off = mem;
	}
	geo->dio_mem_align = mem;
	geo->dio_offset_align = off;
	/* Untorn writes: all three or nothing. */
	if (st->atomic_unit_min &&
	    st->atomic_unit_max >= st->atomic_unit_min &&
	    is_pow2(st->atomic_unit_min) && is_pow2(st->atomic_unit_max)) {
		geo->atomic_unit_min = st->atomic_unit_min;
		geo->atomic_unit_max = st->atomic_unit_max;
		geo->atomic_segments_max = st->atomic_segments_max;
	}
	geo->stripe_unit = fs->stripe_unit;
	geo->stripe_width = fs->stripe_width;
	geo->stripe_source = fs->stripe_source;
	geo->eof_punch_ignored = fs->eof_punch_ignored;
}

static void geo_fallbacks(struct wtio_geometry *geo)
{
	memset(geo, 0, sizeof(*geo));
	geo->dio_mem_align = GEO_DEFAULT_ALIGN;
	geo->dio_offset_align = GEO_DEFAULT_ALIGN;
	geo->blksize = GEO_DEFAULT_ALIGN;
	geo->stripe_source = "none";
}

int wtio_geometry_probe(int fd, struct wtio_geometry *geo)
{
	struct wtio_file_stat st;
	struct wtio_fs_geometry fs;
	int ret;

	if (!geo)
		return -EINVAL;
	/* The fallbacks, so that every return leaves a usable answer. */
	geo_fallbacks(geo);
	ret = wtio_geometry_stat(fd, &st);
	if (ret)
		return ret;
	wtio_geometry_fs(fd, &st, &fs);
	wtio_geometry_combine(&st, &fs, geo);
	return 0;
}
