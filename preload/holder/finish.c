/* SPDX-License-Identifier: MIT */
/*
 * finish.c - the holder's end, once the program's last process has
 * exited: every file still served is written back with its exact size
 * and closed, and the counters go to $WTIO_HOLDER_STATS. A write-back
 * that fails is said (path, error: table.c) and counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "finish.h"
#include "log.h"
#include "record.h"
#include "table.h"

int hfinish(void)
{
	struct hinode **all;
	const char *stats = getenv("WTIO_HOLDER_STATS");
	int failed = 0, n, i;

	for (;;) {
		/* a close or demotion under way ends first (another
		 * thread's: a death heard late, a lease broken) */
		hino_wait_settled();
		n = hino_all(&all);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++) {
			struct hinode *ino = all[i];

			if (hino_begin_busy(ino)) {
				pthread_rwlock_wrlock(&ino->io_lock);
				if (hino_close_handles(ino))
					failed++;
				pthread_rwlock_unlock(&ino->io_lock);
				hdebug("%s: closed (the program ended)",
				       ino->path);
				/* the references of processes not yet heard
				 * dead stay: the holder exits */
				hino_end_busy(ino);
			}
			hino_put(ino);
		}
		free(all);
	}
	/* every file closed: a death from now on loses nothing */
	hrec_ended();
	if (stats && *stats && hstats_write(stats))
		hlog("WTIO_HOLDER_STATS=%s: %s", stats, strerror(errno));
	return failed;
}
