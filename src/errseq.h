/* SPDX-License-Identifier: MIT */
/* errseq.h - write-back errors: recorded for every handle of the inode,
 * reported to each once (errseq.c). */
#ifndef WTIO_ERRSEQ_H
#define WTIO_ERRSEQ_H

#include <stdint.h>

struct wtio_file;
struct wtio_inode;

void wtio_inode_record_error(struct wtio_inode *inode, int err);
/* Report an error not yet seen by this handle, once. */
int wtio_file_check_error(struct wtio_file *file);
/* -errno of the latest error when no handle has reported it, else 0. */
int wtio_errseq_unseen(struct wtio_inode *inode);
/* Where a new handle of the inode starts. */
uint64_t wtio_errseq_sample(struct wtio_inode *inode);

#endif /* WTIO_ERRSEQ_H */
