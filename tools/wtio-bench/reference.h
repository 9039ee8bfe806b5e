/* SPDX-License-Identifier: MIT */
/*
 * reference.h - the published figures each reference suite reproduces
 * (the write-through cover letter's Tables 1-4, the LSF/MM thread's and
 * the DONTCACHE patch's figures), printed beside ours with a verdict.
 */
#ifndef WTIO_BENCH_REFERENCE_H
#define WTIO_BENCH_REFERENCE_H

#include <stdio.h>

#include "result.h"

/* The reference's table beside ours and one verdict line; nothing when
 * the experiment has no reference. */
void reference_print(FILE *f, struct exp_result *er);
/* The same as a JSON object, or null. */
void reference_json(FILE *f, struct exp_result *er);

#endif
