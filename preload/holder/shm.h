/* SPDX-License-Identifier: MIT */
/*
 * shm.h - the holder's side of the shared position and size page
 * (holder_proto.h, struct holder_shm): slots for OFDs and files, sizes
 * published, positions set by clients taken back.
 */
#ifndef WTIO_HOLDER_SHM_H
#define WTIO_HOLDER_SHM_H

#include <sys/types.h>

struct hinode;
struct hofd;

/* Make the page (once: wtio-run before it forks the holder, which keeps
 * it). 0, or -errno: then clients ask. */
int hshm_init(void);
/* The holder is dead: clients answer nothing from the page any more. */
void hshm_mark_dead(void);
/* A new descriptor of the page for a client (HOP_SHM), or -errno. */
int hshm_dup(void);
/* o (and its file, if it has none yet) gets a slot, before its id is
 * given to a client. Nothing happens when the OFD's slot is taken or the page is missing. */
void hshm_attach(struct hofd *o);
/* o goes: its slot is free again (a position left in it goes with it). */
void hshm_detach(struct hofd *o);
/* The file goes: its size slot is free again. */
void hshm_ino_release(struct hinode *ino);
/* Publish the file's size as wtio has it. io_lock held (the handle
 * lives). Call before answering anything that may have moved it. */
void hshm_publish(struct hinode *ino);
/* The OFD's position, given pos: a client's position set since, taken
 * (the slot is empty again). pos_lock held. */
off_t hshm_take_pos(struct hofd *o, off_t pos);
/* The demotion: no more local seeks on any OFD of ino (each OFD's
 * position taken into o->pos) nor local sizes. io_lock held exclusive. */
void hshm_close_ino(struct hinode *ino);

#endif
