/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The server's data-buffer pool and the fair queue of requests waiting for
 * a buffer. Neither knows about the fabric or threads: the progress thread
 * owns both.
 *
 * Delayed allocation: a request holds a buffer only while it moves data;
 * one waiting for a buffer costs its queue link, nothing more.
 */
#ifndef ORFS_SERVER_SCHED_H
#define ORFS_SERVER_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* A fixed number of fixed-size, page-aligned chunks from one allocation. */
struct pool {
	char		*base;
	size_t		chunk;
	uint32_t	nchunks;
	uint32_t	nfree;
	uint32_t	*free;		/* stack of free chunk indexes */
};

int pool_init(struct pool *p, size_t chunk, uint32_t nchunks);
void pool_destroy(struct pool *p);
void *pool_get(struct pool *p);			/* NULL when empty */
void pool_put(struct pool *p, void *chunk);

/*
 * Credits for a new connection: a fair share of what is left of a receive
 * budget of BUDGET buffers of which USED are held by NCONNS connections,
 * at most MAX and at most what the client can receive (DEPTH), never fewer
 * than MIN. Together connections hold at most BUDGET + MIN per connection.
 */
int credits_for(int budget, int used, int nconns, int max, int min, int depth);

/* A minimal circular doubly-linked list. */
struct link {
	struct link *next, *prev;
};

/* Priority classes of exports and volumes; weights 4, 2, 1. */
enum fq_class { FQ_HIGH, FQ_NORMAL, FQ_LOW, FQ_CLASSES };

/* One waiting request, embedded in the request. */
struct fq_item {
	struct link	node;		/* in its flow */
	uint32_t	bytes;		/* what serving it moves: its cost */
};

/* One connection's queue of waiting requests. */
struct fq_flow {
	struct link	items;
	struct link	node;		/* in its class ring while it has items */
	enum fq_class	class;
	uint32_t	queued;
	int64_t		deficit;	/* bytes it may still be served this turn */
};

/*
 * Deficit round robin by bytes, on two levels: the classes share in
 * proportion to their weights, and the flows of a class share equally,
 * whatever the size of their requests. A turn is QUANTUM bytes (a class
 * gets its weight in quanta); one item may overdraw a turn, and the next
 * turn pays it back, so no flow or class gets more than one item ahead
 * of its share.
 */
struct fq {
	struct link	ring[FQ_CLASSES];
	int64_t		deficit[FQ_CLASSES];
	int		cur;		/* the class being served */
	uint32_t	quantum;
	uint32_t	queued;
};

/* An empty queue whose turns are QUANTUM bytes (0: 256 KiB). */
void fq_init(struct fq *q, uint32_t quantum);
void fq_flow_init(struct fq_flow *f, enum fq_class class);
void fq_push(struct fq *q, struct fq_flow *f, struct fq_item *it);
/* The next item in deficit round robin across classes and flows, or NULL. */
struct fq_item *fq_pop(struct fq *q, struct fq_flow **flow);
/* Take F out of the queue with all its items (a closing connection). */
void fq_flow_remove(struct fq *q, struct fq_flow *f);

#endif /* ORFS_SERVER_SCHED_H */
