/* SPDX-License-Identifier: MIT */
/*
 * shm.c - the shared position and size page (holder_proto.h explains the
 * words). Sizes are published under a lock striped by file slot, reading
 * wtio's size under it: the last publisher after any change reads the
 * size as that change left it, so the slot never keeps a stale value
 * once every call that moved the size has answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../memfd_size.h"
#include "holder_proto.h"
#include "log.h"
#include "record.h"
#include "shm.h"
#include "table.h"

#define PUB_LOCKS 64

static struct holder_shm *shm;
static int shm_fd = -1;
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
/* slot_lock: */
static struct hofd *ofd_owner[HOLDER_SHM_OFDS];
static unsigned char ino_used[HOLDER_SHM_INOS];
static unsigned int ino_next;
static pthread_mutex_t pub_lock[PUB_LOCKS];

int hshm_init(void)
{
	unsigned int i;
	void *p;
	int fd;

	if (shm)
		return 0;
	fd = memfd_create("wtio-holder-shm", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	{
		int e = memfd_size(fd, sizeof(*shm), ftruncate);

		if (e < 0) {
			close(fd);
			return e;
		}
	}
	p = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		int e = -errno;

		close(fd);
		return e;
	}
	shm = p;
	for (i = 0; i < HOLDER_SHM_OFDS; i++)
		atomic_store(&shm->ofd[i].pos, HOLDER_SHM_CLOSED);
	for (i = 0; i < HOLDER_SHM_INOS; i++)
		atomic_store(&shm->size[i], -1);
	for (i = 0; i < PUB_LOCKS; i++)
		pthread_mutex_init(&pub_lock[i], NULL);
	shm->magic = HOLDER_SHM_MAGIC;
	shm_fd = fd;
	return 0;
}

void hshm_mark_dead(void)
{
	if (shm)
		atomic_store(&shm->dead, 1);
}

int hshm_dup(void)
{
	int fd;

	if (shm_fd < 0)
		return -ENOSYS;
	fd = fcntl(shm_fd, F_DUPFD_CLOEXEC, 3);
	return fd < 0 ? -errno : fd;
}

void hshm_attach(struct hofd *o)
{
	struct hinode *ino = o->ino;
	unsigned int i = (unsigned int)(o->id % HOLDER_SHM_OFDS), n;

	o->shm_slot = -1;
	if (!shm)
		return;
	pthread_mutex_lock(&slot_lock);
	if (ofd_owner[i])
		goto out;
	if (ino->shm_slot < 0) {
		for (n = 0; n < HOLDER_SHM_INOS; n++) {
			unsigned int s = (ino_next + n) % HOLDER_SHM_INOS;

			if (!ino_used[s]) {
				ino_used[s] = 1;
				ino_next = s + 1;
				atomic_store(&shm->size[s], -1);
				ino->shm_slot = (int)s;
				break;
			}
		}
		if (ino->shm_slot < 0)
			goto out;
	}
	ofd_owner[i] = o;
	o->shm_slot = (int)i;
	/* id and ino before the word that opens the slot: a client checks
	 * the word, then the id (holder_proto.h) */
	atomic_store(&shm->ofd[i].ino, (uint32_t)ino->shm_slot);
	atomic_store(&shm->ofd[i].id, o->id);
	atomic_store(&shm->ofd[i].pos, HOLDER_SHM_GEN(o->id) << 48);
out:
	pthread_mutex_unlock(&slot_lock);
}

static void close_slot(struct hofd *o)
{
	uint64_t gen = HOLDER_SHM_GEN(o->id) << 48;
	uint64_t w = atomic_exchange(&shm->ofd[o->shm_slot].pos,
				     gen | HOLDER_SHM_CLOSED);
	uint64_t v = w & HOLDER_SHM_CLOSED;

	if ((w & ~HOLDER_SHM_CLOSED) == gen && v && v != HOLDER_SHM_CLOSED)
		o->pos = (off_t)(v - 1);
}

void hshm_detach(struct hofd *o)
{
	if (!shm || o->shm_slot < 0)
		return;
	close_slot(o);
	atomic_store(&shm->ofd[o->shm_slot].id, 0);
	pthread_mutex_lock(&slot_lock);
	ofd_owner[o->shm_slot] = NULL;
	pthread_mutex_unlock(&slot_lock);
	o->shm_slot = -1;
}

void hshm_ino_release(struct hinode *ino)
{
	if (!shm || ino->shm_slot < 0)
		return;
	atomic_store(&shm->size[ino->shm_slot], -1);
	pthread_mutex_lock(&slot_lock);
	ino_used[ino->shm_slot] = 0;
	pthread_mutex_unlock(&slot_lock);
	ino->shm_slot = -1;
}

void hshm_publish(struct hinode *ino)
{
	pthread_mutex_t *l;
	off_t size;

	if (!shm || ino->shm_slot < 0 || ino->shm_closed) {
		/* the record's size, which wtio-run sets the file to if the
		 * holder dies (record.h) */
		hrec_size(ino->rec, ino->wf ? wtio_file_size(ino->wf) : -1);
		return;
	}
	l = &pub_lock[ino->shm_slot % PUB_LOCKS];
	pthread_mutex_lock(l);
	size = ino->wf ? wtio_file_size(ino->wf) : -1;
	if (!ino->shm_closed)
		atomic_store(&shm->size[ino->shm_slot], size < 0 ? -1 : size);
	hrec_size(ino->rec, size);
	pthread_mutex_unlock(l);
}

off_t hshm_take_pos(struct hofd *o, off_t pos)
{
	uint64_t gen, w, v;
	_Atomic uint64_t *word;

	if (!shm || o->shm_slot < 0)
		return pos;
	gen = HOLDER_SHM_GEN(o->id) << 48;
	word = &shm->ofd[o->shm_slot].pos;
	w = atomic_load(word);
	for (;;) {
		v = w & HOLDER_SHM_CLOSED;
		if ((w & ~HOLDER_SHM_CLOSED) != gen || !v ||
		    v == HOLDER_SHM_CLOSED)
			return pos;
		if (atomic_compare_exchange_weak(word, &w, gen))
			return (off_t)(v - 1);
	}
}

void hshm_close_ino(struct hinode *ino)
{
	struct hofd *o;
	pthread_mutex_t *l;

	if (!shm)
		return;
	for (o = ino->ofds; o; o = o->ino_next)
		if (o->shm_slot >= 0 && !o->demoted)
			close_slot(o);
	if (ino->shm_slot < 0)
		return;
	l = &pub_lock[ino->shm_slot % PUB_LOCKS];
	pthread_mutex_lock(l);
	ino->shm_closed = true;
	atomic_store(&shm->size[ino->shm_slot], -1);
	pthread_mutex_unlock(l);
}
