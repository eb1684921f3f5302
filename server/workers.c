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

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	struct job *j;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->todo && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->todo)
			break;
		j = w->todo;
		w->todo = j->next;
		if (!w->todo)
			w->todo_tail = &w->todo;
		pthread_mutex_unlock(&w->lock);

		j->result = j->run(j);
		box_put(j->box, j);

		pthread_mutex_lock(&w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_start(struct workers *w, int nthreads)
{
	int i, ret;

	memset(w, 0, sizeof(*w));
	w->todo_tail = &w->todo;
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
	j->next = NULL;
	j->box = box ? box : &w->box;
	pthread_mutex_lock(&w->lock);
	*w->todo_tail = j;
	w->todo_tail = &j->next;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}
