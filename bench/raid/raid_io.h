/* SPDX-License-Identifier: MIT */
/*
 * raid_io.h - the user-space RAID as a wtio I/O backend (bench and tests
 * only; it needs the static libwtio, whose wtio_ctx_create_io is hidden
 * from libwtio.so).
 */
#ifndef WTIO_RAID_IO_H
#define WTIO_RAID_IO_H

#include "raid_files.h"
#include "wtio.h"

/*
 * wtio_ctx_create() over the RAID: cfg (NULL: the defaults) with, unless
 * it sets its own, the volume's stripe geometry (stripe_unit = chunk,
 * stripe_width = chunk * data disks). Files opened in the context keep
 * their bytes in rf's volume (raid_files.h). Synchronous (the psync
 * engine), no channels, no untorn writes (-EOPNOTSUPP for WTIO_ATOMIC: a
 * RAID write is not all-or-nothing across members).
 */
int raid_ctx_create(const struct wtio_config *cfg, struct raid_files *rf,
		    struct wtio_ctx **ctxp);

#endif /* WTIO_RAID_IO_H */
