// SPDX-License-Identifier: GPL-2.0-only
/* I/O worker threads of the server. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "server/workers.h"

int box_init(struct done_box *b)
{
	memset(b, 0, sizeof(*b));
	atomic_init(&b->have_done, 0);
	pthread_mutex_init(&b->lock, NULL);
	b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (b->efd < 0) {
		perror("orfs-server: eventfd");
		return -1;
	}
	return 0;
}

void box_destroy(struct done_box *b)
{
	if (b->efd >= 0)
		close(b->efd);
	b->efd = -1;
}

static void box_put(struct done_box *b, struct job *j)
{
	const uint64_t one = 1;

	pthread_mutex_lock(&b->lock);
	/* The eventfd is readable exactly while done is not empty. */
	if (!b->done) {
		atomic_store_explicit(&b->have_done, 1, memory_order_relaxed);
		if (write(b->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			perror("orfs-server: eventfd write");
	}
	j->next = b->done;
	b->done = j;
	pthread_mutex_unlock(&b->lock);
}

struct job *box_reap(struct done_box *b)
{
	struct job *list;
	uint64_t n;

	pthread_mutex_lock(&b->lock);
	list = b->done;
	b->done = NULL;
	atomic_store_explicit(&b->have_done, 0, memory_order_relaxed);
	if (list && read(b->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		perror("orfs-server: eventfd read");
	pthread_mutex_unlock(&b->lock);
	return list;
}

/* Under W->lock: the queue of PEER, made if need be. */
static struct wq *wq_get(struct workers *w, uint64_t peer)
{
	struct wq **pp = &w->hash[(peer * 0x9e3779b97f4a7c15ULL) >> 56];
	struct wq *q;

	for (q = *pp; q; q = q->hnext)
		if (q->peer == peer)
			return q;
	q = calloc(1, sizeof(*q));
	if (!q)
		return &w->spare;	/* still run, in one shared turn */
	q->peer = peer;
	q->tail = &q->todo;
	q->hnext = *pp;
	*pp = q;
	w->nqueues++;
	return q;
}

/* Under W->lock: forget Q once it has nothing queued or running. */
static void wq_put(struct workers *w, struct wq *q)
{
	struct wq **pp = &w->hash[(q->peer * 0x9e3779b97f4a7c15ULL) >> 56];

	if (q == &w->spare || q->todo || q->running)
		return;
	while (*pp != q)
		pp = &(*pp)->hnext;
	*pp = q->hnext;
	w->nqueues--;
	free(q);
}

/* Under W->lock: Q, which has jobs, takes the last place in the turn. */
static void turn_add(struct workers *w, struct wq *q)
{
	q->tnext = NULL;
	q->in_turn = 1;
	*w->turn_tail = q;
	w->turn_tail = &q->tnext;
}

/* Under W->lock: the next job, of the queue whose turn it is, into *QP. */
static struct job *turn_next(struct workers *w, struct wq **qp)
{
	struct wq *q = w->turn;
	struct job *j = q->todo;

	w->turn = q->tnext;
	if (!w->turn)
		w->turn_tail = &w->turn;
	q->in_turn = 0;
	q->todo = j->next;
	if (!q->todo)
		q->tail = &q->todo;
	else
		turn_add(w, q);
	q->running++;
	*qp = q;
	return j;
}

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	struct job *j;
	struct wq *q;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->turn && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->turn)
			break;
		j = turn_next(w, &q);
		pthread_mutex_unlock(&w->lock);

		j->result = j->run(j);
		box_put(j->box, j);

		pthread_mutex_lock(&w->lock);
		q->running--;
		wq_put(w, q);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_start(struct workers *w, int nthreads)
{
	int i, ret;

	memset(w, 0, sizeof(*w));
	w->turn_tail = &w->turn;
	w->spare.tail = &w->spare.todo;
	if (box_init(&w->box))
		return -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->threads = calloc((size_t)nthreads, sizeof(*w->threads));
	if (!w->threads)
		return -1;
	for (i = 0; i < nthreads; i++) {
		ret = pthread_create(&w->threads[i], NULL, worker_main, w);
		if (ret) {
			fprintf(stderr, "orfs-server: pthread_create: %s\n", strerror(ret));
			workers_stop(w);
			return -1;
		}
		w->nthreads++;
	}
	return 0;
}

void workers_stop(struct workers *w)
{
	int i;

	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	for (i = 0; i < w->nthreads; i++)
		pthread_join(w->threads[i], NULL);
	free(w->threads);
	w->threads = NULL;
	w->nthreads = 0;
	box_destroy(&w->box);
}

void workers_submit(struct workers *w, struct job *j, struct done_box *box)
{
	struct wq *q;

	j->next = NULL;
	j->box = box ? box : &w->box;
	pthread_mutex_lock(&w->lock);
	q = wq_get(w, j->peer);
	*q->tail = j;
	q->tail = &j->next;
	if (!q->in_turn)
		turn_add(w, q);
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}
