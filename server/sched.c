// SPDX-License-Identifier: GPL-2.0-only
/* The server's data-buffer pool and fair queue. */
#include <stdlib.h>
#include <string.h>

#include "server/sched.h"

static const int fq_weight[FQ_CLASSES] = { 4, 2, 1 };

int pool_init(struct pool *p, size_t chunk, uint32_t nchunks)
{
	uint32_t i;

	memset(p, 0, sizeof(*p));
	if (!chunk || !nchunks || chunk % 4096)
		return -1;
	if (posix_memalign((void **)&p->base, 4096, chunk * nchunks))
		return -1;
	p->free = calloc(nchunks, sizeof(*p->free));
	if (!p->free) {
		free(p->base);
		p->base = NULL;
		return -1;
	}
	p->chunk = chunk;
	p->nchunks = nchunks;
	for (i = 0; i < nchunks; i++)
		p->free[i] = nchunks - 1 - i;
	p->nfree = nchunks;
	return 0;
}

void pool_destroy(struct pool *p)
{
	free(p->free);
	free(p->base);
	memset(p, 0, sizeof(*p));
}

void *pool_get(struct pool *p)
{
	if (!p->nfree)
		return NULL;
	return p->base + (size_t)p->free[--p->nfree] * p->chunk;
}

void pool_put(struct pool *p, void *chunk)
{
	size_t off = (size_t)((char *)chunk - p->base);

	p->free[p->nfree++] = (uint32_t)(off / p->chunk);
}

int credits_for(int budget, int used, int nconns, int max, int min, int depth)
{
	int n = budget / (nconns + 1);

	if (n > budget - used)
		n = budget - used;
	if (n > max)
		n = max;
	if (n > depth)
		n = depth;
	return n < min ? min : n;
}

static void link_init(struct link *l)
{
	l->next = l->prev = l;
}

static int link_empty(const struct link *l)
{
	return l->next == l;
}

static void link_add_tail(struct link *head, struct link *l)
{
	l->prev = head->prev;
	l->next = head;
	head->prev->next = l;
	head->prev = l;
}

static void link_del(struct link *l)
{
	l->prev->next = l->next;
	l->next->prev = l->prev;
	link_init(l);
}

#define link_entry(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

void fq_init(struct fq *q)
{
	int c;

	memset(q, 0, sizeof(*q));
	for (c = 0; c < FQ_CLASSES; c++) {
		link_init(&q->ring[c]);
		q->budget[c] = fq_weight[c];
	}
}

void fq_flow_init(struct fq_flow *f, enum fq_class class)
{
	memset(f, 0, sizeof(*f));
	link_init(&f->items);
	link_init(&f->node);
	f->class = class;
}

void fq_push(struct fq *q, struct fq_flow *f, struct fq_item *it)
{
	link_add_tail(&f->items, &it->node);
	if (!f->queued++)
		link_add_tail(&q->ring[f->class], &f->node);
	q->queued++;
}

struct fq_item *fq_pop(struct fq *q, struct fq_flow **flow)
{
	struct fq_flow *f;
	struct link *l;
	int c, pass;

	if (!q->queued)
		return NULL;
	/* Serve the classes in proportion to their weights; refill when every
	 * class that has work has used its share, so no class starves and an
	 * idle class's share goes to the others.
	 */
	for (pass = 0; pass < 2; pass++) {
		for (c = 0; c < FQ_CLASSES; c++)
			if (!link_empty(&q->ring[c]) && q->budget[c] > 0)
				goto found;
		for (c = 0; c < FQ_CLASSES; c++)
			q->budget[c] = fq_weight[c];
	}
	return NULL;	/* not reached: queued > 0 means some ring has work */
found:
	q->budget[c]--;
	f = link_entry(q->ring[c].next, struct fq_flow, node);
	l = f->items.next;
	link_del(l);
	q->queued--;
	link_del(&f->node);
	if (--f->queued)
		link_add_tail(&q->ring[c], &f->node);	/* round robin */
	if (flow)
		*flow = f;
	return link_entry(l, struct fq_item, node);
}

void fq_flow_remove(struct fq *q, struct fq_flow *f)
{
	while (!link_empty(&f->items))
		link_del(f->items.next);
	q->queued -= f->queued;
	f->queued = 0;
	link_del(&f->node);
}
