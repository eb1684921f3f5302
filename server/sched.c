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

void fq_init(struct fq *q, uint32_t quantum)
{
	int c;

	memset(q, 0, sizeof(*q));
	for (c = 0; c < FQ_CLASSES; c++)
		link_init(&q->ring[c]);
	q->quantum = quantum ? quantum : 256u << 10;
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

/* A class or flow that has no more work keeps its debt, not its credit. */
static int64_t debt_only(int64_t deficit)
{
	return deficit < 0 ? deficit : 0;
}

struct fq_item *fq_pop(struct fq *q, struct fq_flow **flow)
{
	struct fq_flow *f;
	struct link *l;
	struct fq_item *it;
	int c;

	if (!q->queued)
		return NULL;
	/*
	 * The class: the current one while it has work and credit; else the
	 * next with work, given its weight in quanta. Every look either
	 * serves or adds credit, so one comes within a few rounds.
	 */
	for (;;) {
		c = q->cur;
		if (!link_empty(&q->ring[c]) && q->deficit[c] > 0)
			break;
		if (link_empty(&q->ring[c]))
			q->deficit[c] = debt_only(q->deficit[c]);
		q->cur = (c + 1) % FQ_CLASSES;
		c = q->cur;
		if (!link_empty(&q->ring[c]))
			q->deficit[c] += (int64_t)fq_weight[c] * q->quantum;
	}
	/* The flow: the one at the head of the class's ring, in the same way. */
	for (;;) {
		f = link_entry(q->ring[c].next, struct fq_flow, node);
		if (f->deficit > 0)
			break;
		f->deficit += q->quantum;
		link_del(&f->node);
		link_add_tail(&q->ring[c], &f->node);
	}
	l = f->items.next;
	link_del(l);
	it = link_entry(l, struct fq_item, node);
	q->queued--;
	f->deficit -= it->bytes;
	q->deficit[c] -= it->bytes;
	if (!--f->queued) {
		link_del(&f->node);
		f->deficit = debt_only(f->deficit);
	}
	if (flow)
		*flow = f;
	return it;
}

void fq_flow_remove(struct fq *q, struct fq_flow *f)
{
	while (!link_empty(&f->items))
		link_del(f->items.next);
	q->queued -= f->queued;
	f->queued = 0;
	f->deficit = 0;
	link_del(&f->node);
}
