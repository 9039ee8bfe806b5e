/* SPDX-License-Identifier: MIT */
/* modes.c - the table of modes. */
#include <fcntl.h>
#include <string.h>

#include "modes.h"
#include "wtio.h"

const struct mode_def mode_table[] = {
	{ "kernel-buffered", FAMILY_KERNEL, 0, 0, false, 0, 0,
	  "kernel page cache, pwrite/pread (write-back by the kernel)", 0 },
	{ "kernel-direct", FAMILY_KERNEL, O_DIRECT, 0, false, 0, 0,
	  "O_DIRECT: no cache, the device's limit", 0 },
	{ "kernel-dontcache", FAMILY_KERNEL, 0, RWF_DONTCACHE, false, 0, 0,
	  "pwritev2/preadv2 with RWF_DONTCACHE (drop-behind)", 0 },
	{ "kernel-sfr", FAMILY_KERNEL, 0, 0, true, 0, 0,
	  "buffered write + sync_file_range(WRITE) of it by the writer", 0 },
	{ "wtio-writeback", FAMILY_WTIO, 0, 0, false, 0, 0,
	  "wtio write-back (flags 0)", 0 },
	{ "wtio-writeback-keep", FAMILY_WTIO, 0, 0, false, 0, 0,
	  "wtio write-back, closed files kept cached (WTIO_CONFIG_KEEP_CLOSED: "
	  "close writes nothing back, the flushers and wtio_ctx_destroy do)",
	  WTIO_CONFIG_KEEP_CLOSED },
	{ "wtio-writethrough", FAMILY_WTIO, 0, 0, false,
	  WTIO_WRITETHROUGH, 0, "WTIO_WRITETHROUGH", 0 },
	{ "wtio-writethrough-noserial", FAMILY_WTIO, 0, 0, false,
	  WTIO_WRITETHROUGH | WTIO_NOSERIAL, 0,
	  "WTIO_WRITETHROUGH | WTIO_NOSERIAL (the reference's \"Writethrough IO\")", 0 },
	{ "wtio-writethrough-aio", FAMILY_WTIO, 0, 0, false,
	  WTIO_WRITETHROUGH, 0,
	  "WTIO_WRITETHROUGH, every channel over Linux AIO (WTIO_CONFIG_AIO_CHANNELS; "
	  "the queues' are by default)",
	  WTIO_CONFIG_AIO_CHANNELS },
	{ "wtio-writethrough-uring", FAMILY_WTIO, 0, 0, false,
	  WTIO_WRITETHROUGH, 0,
	  "WTIO_WRITETHROUGH, every channel over io_uring, the queues' too "
	  "(WTIO_CONFIG_URING_CHANNELS)",
	  WTIO_CONFIG_URING_CHANNELS },
	{ "wtio-dontcache", FAMILY_WTIO, 0, 0, false,
	  WTIO_DONTCACHE, WTIO_DONTCACHE, "WTIO_DONTCACHE (drop-behind)", 0 },
	{ "wtio-writethrough-dontcache", FAMILY_WTIO, 0, 0, false,
	  WTIO_WRITETHROUGH | WTIO_DONTCACHE, WTIO_DONTCACHE,
	  "WTIO_WRITETHROUGH | WTIO_DONTCACHE", 0 },
	{ "wtio-adaptive", FAMILY_WTIO, 0, 0, false, WTIO_ADAPTIVE, 0,
	  "WTIO_ADAPTIVE (write-back; write-through once a writer would be throttled)", 0 },
};
const int nr_mode_table = sizeof(mode_table) / sizeof(mode_table[0]);

int mode_find(const char *name)
{
	for (int i = 0; i < nr_mode_table; i++)
		if (!strcmp(mode_table[i].name, name))
			return i;
	return -1;
}
