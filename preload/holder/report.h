/* SPDX-License-Identifier: MIT */
/*
 * report.h - wtio-run's report of what died with its cache holder.
 */
#ifndef WTIO_HOLDER_REPORT_H
#define WTIO_HOLDER_REPORT_H

#include <stdbool.h>
#include <sys/types.h>

struct hrec;

/* wtio-run's exit status when the holder died with data it had not
 * written back (man/wtio-run.1). */
#define HOLDER_LOST_STATUS	125

/* Say (stderr, and log_fd if >= 0) that the holder died (wstatus: its
 * wait status, -1 unknown) and which files had data it had not written
 * back, and how much; then, after settle() (if not NULL: the wait for the
 * program, its status in *settled), set each served file's size to the
 * one the program was last told (the holder's whole-block writes leave
 * it longer until a sync or close). true if something was (or may have
 * been) lost, or a size is left wrong. */
bool hreport_lost(struct hrec *r, int log_fd, pid_t holder, int wstatus,
		  int (*settle)(void), int *settled);
/* The holder died (wstatus as above) before it started the program:
 * say that the program did not run. */
void hreport_early(int log_fd, pid_t holder, int wstatus);
/* wtio-run returns while the holder serves processes left behind: a
 * watchdog process waits for the holder's end (pidfd) and, if it died
 * (its record not marked ended), says so on --log's file or stderr. */
void hreport_watch(struct hrec *r, int pidfd, int log_fd, pid_t holder);

#endif
