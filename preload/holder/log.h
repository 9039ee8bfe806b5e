/* SPDX-License-Identifier: MIT */
/*
 * log.h - the holder's messages (its stderr, or --log's file) and its
 * counters (struct holder_stats of holder_proto.h).
 */
#ifndef WTIO_HOLDER_LOG_H
#define WTIO_HOLDER_LOG_H

#include <stdbool.h>
#include <sys/types.h>

#include "../holder_proto.h"

extern struct holder_stats hstats;
#define HSTAT_ADD(field, n) __atomic_fetch_add(&hstats.field, (n), __ATOMIC_RELAXED)
#define HSTAT_INC(field) HSTAT_ADD(field, 1)

void hlog_init(bool debug);
bool hlog_debugging(void);
/* Always said (errors, data lost). */
void hlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Said with --debug: one line per decision. */
void hdebug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A snapshot of the counters. */
void hstats_get(struct holder_stats *out);
/* The umask the stats file is created with (the program's). */
void hstats_umask(mode_t um);
/* Write them as "name value" lines to path (WTIO_HOLDER_STATS). */
int hstats_write(const char *path);

#endif
