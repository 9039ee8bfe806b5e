/* SPDX-License-Identifier: MIT */
/*
 * remote_shm.c - lseek on a served descriptor without a round trip, from
 * the holder's shared position and size page (holder_proto.h, struct
 * holder_shm: the words and why a CAS from a checked word is safe). The
 * page is asked for once per process image and kept (a fork inherits
 * the mapping); anything unusual (no page, the slot not this OFD's, a
 * demotion begun, SEEK_CUR with no position set here, SEEK_DATA, a
 * position past the end of the file) goes to the holder as before.
 * fstat takes its size from the same page.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "remote.h"
#include "shim.h"

#define NO_PAGE ((struct holder_shm *)1)

static struct holder_shm *_Atomic page;

static struct holder_shm *get_page(void)
{
	struct holder_shm *p = atomic_load_explicit(&page, memory_order_acquire);
	struct holder_req rq = { .op = HOP_SHM };
	struct holder_reply rp;
	struct rconn tmp, *c;
	void *m = MAP_FAILED;
	int fd = -1, r;

	if (p)
		return p == NO_PAGE ? NULL : p;
	if (shim_vfork_child() || !(c = rc_get(&tmp)))
		return NULL;
	r = rc_call(c, &rq, -1, &rp, &fd, true);
	rc_put(c);
	if (r == 0 && rp.status == 0 && fd >= 0)
		m = real.mmap(NULL, sizeof(struct holder_shm),
			      PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		real.close(fd);
	if (r < 0)		/* the holder is gone: its calls say so */
		return NULL;
	p = m != MAP_FAILED && ((struct holder_shm *)m)->magic ==
			       HOLDER_SHM_MAGIC ? m : NO_PAGE;
	if (m != MAP_FAILED && p == NO_PAGE)
		munmap(m, sizeof(struct holder_shm));
	{
		struct holder_shm *none = NULL;

		if (!atomic_compare_exchange_strong(&page, &none, p)) {
			if (p != NO_PAGE)
				munmap(m, sizeof(struct holder_shm));
			p = none;	/* another thread's */
		}
	}
	return p == NO_PAGE ? NULL : p;
}

/* fd's OFD and its slot in the page, when the page may answer for it. */
struct local_slot {
	struct holder_shm *m;
	struct holder_shm_ofd *s;
	uint64_t gen;	/* the OFD's generation, in place (<< 48) */
	uint64_t w;	/* the position word as checked */
};

/* w is this generation's word, open for local seeks */
static bool word_open(uint64_t w, uint64_t gen)
{
	return (w & ~HOLDER_SHM_CLOSED) == gen &&
	       (w & HOLDER_SHM_CLOSED) != HOLDER_SHM_CLOSED;
}

/* fd served, the page mapped and alive, the slot fd's OFD's and open:
 * true, l filled. */
static bool local_slot(int fd, struct local_slot *l)
{
	uint64_t v = remote_slot(fd), id;

	if (!v || (v & RTAB_DEMOTED) || !(l->m = get_page()) ||
	    atomic_load_explicit(&l->m->dead, memory_order_acquire))
		return false;	/* a dead holder: its EIO */
	id = v - 1;
	l->s = &l->m->ofd[id % HOLDER_SHM_OFDS];
	l->gen = (uint64_t)HOLDER_SHM_GEN(id) << 48;
	l->w = atomic_load_explicit(&l->s->pos, memory_order_acquire);
	return word_open(l->w, l->gen) &&
	       atomic_load_explicit(&l->s->id, memory_order_acquire) == id;
}

/* The size of the slot's file, or -1 (unknown: ask the holder). */
static int64_t local_size(const struct local_slot *l)
{
	uint32_t i = atomic_load_explicit(&l->s->ino, memory_order_relaxed);

	if (i >= HOLDER_SHM_INOS)
		return -1;
	return atomic_load_explicit(&l->m->size[i], memory_order_acquire);
}

int remote_seek_local(int fd, off_t off, int whence, off_t *res)
{
	struct local_slot l;
	uint64_t cur;
	int64_t base, r;

	if ((whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) ||
	    !local_slot(fd, &l))
		return 0;
	cur = l.w & HOLDER_SHM_CLOSED;
	switch (whence) {
	case SEEK_SET:
		base = 0;
		break;
	case SEEK_CUR:		/* known here only if set here */
		if (!cur)
			return 0;
		base = (int64_t)(cur - 1);
		break;
	default:
		base = local_size(&l);
		if (base < 0)
			return 0;
	}
	if (off > HOLDER_SHM_POS_MAX || off < -HOLDER_SHM_POS_MAX)
		return 0;
	r = base + off;
	if (r < 0) {		/* the kernel's EINVAL; nothing moves */
		*res = -EINVAL;
		return 1;
	}
	/* past the end of the file: the filesystem's limit may refuse it,
	 * which the holder knows (shim_rw.h, shim_seek_limit) */
	if (r > HOLDER_SHM_POS_MAX ||
	    (r > (whence == SEEK_END ? base : local_size(&l)) &&
	     !(whence == SEEK_CUR && off == 0)))
		return 0;
	/* fails if the holder took the position, or the slot closed or
	 * moved on since the word was read: then the holder answers */
	if (!atomic_compare_exchange_strong(&l.s->pos, &l.w,
					    l.gen | (uint64_t)(r + 1)))
		return 0;
	*res = r;
	return 1;
}

int remote_size_local(int fd, off_t *size)
{
	struct local_slot l;
	int64_t sz;

	if (!local_slot(fd, &l))
		return 0;
	sz = local_size(&l);
	/* still this OFD's slot, open: the size was its file's */
	if (sz < 0 ||
	    !word_open(atomic_load_explicit(&l.s->pos, memory_order_acquire),
		       l.gen))
		return 0;
	*size = (off_t)sz;
	return 1;
}
