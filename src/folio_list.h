/* SPDX-License-Identifier: MIT */
/*
 * folio_list.h - the doubly linked lists an inode keeps of its folios:
 * all it caches, the dirty ones (oldest first) and those under
 * writeback. A folio is on each list through a link of its own, named
 * by the link's offset in struct wtio_folio (WTIO_FL_*); the list's lock
 * covers the links too.
 */
#ifndef WTIO_FOLIO_LIST_H
#define WTIO_FOLIO_LIST_H

#include <stddef.h>

struct wtio_folio;

struct wtio_folio_link {
	struct wtio_folio *prev, *next;
};

struct wtio_folio_list {
	struct wtio_folio *head, *tail;
};

static inline struct wtio_folio_link *wtio_flink(struct wtio_folio *f,
						 size_t link)
{
	return (struct wtio_folio_link *)((char *)f + link);
}

/* Put f between prev and next (NULL: the list's end). */
static inline void wtio_flist_link(struct wtio_folio_list *l,
				   struct wtio_folio *f, size_t link,
				   struct wtio_folio *prev,
				   struct wtio_folio *next)
{
	struct wtio_folio_link *lk = wtio_flink(f, link);

	lk->prev = prev;
	lk->next = next;
	if (prev)
		wtio_flink(prev, link)->next = f;
	else
		l->head = f;
	if (next)
		wtio_flink(next, link)->prev = f;
	else
		l->tail = f;
}

static inline void wtio_flist_add_head(struct wtio_folio_list *l,
				       struct wtio_folio *f, size_t link)
{
	wtio_flist_link(l, f, link, NULL, l->head);
}

static inline void wtio_flist_add_tail(struct wtio_folio_list *l,
				       struct wtio_folio *f, size_t link)
{
	wtio_flist_link(l, f, link, l->tail, NULL);
}

static inline void wtio_flist_del(struct wtio_folio_list *l,
				  struct wtio_folio *f, size_t link)
{
	struct wtio_folio_link *lk = wtio_flink(f, link);

	if (lk->prev)
		wtio_flink(lk->prev, link)->next = lk->next;
	else
		l->head = lk->next;
	if (lk->next)
		wtio_flink(lk->next, link)->prev = lk->prev;
	else
		l->tail = lk->prev;
	lk->prev = lk->next = NULL;
}

#endif /* WTIO_FOLIO_LIST_H */
