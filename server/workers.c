// SPDX-License-Identifier: GPL-2.0-only
/* I/O worker threads of the server. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "server/workers.h"

static void *worker_main(void *arg)
{
	struct workers *w = arg;
	const uint64_t one = 1;
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

		pthread_mutex_lock(&w->lock);
		/* The eventfd is readable exactly while done is not empty. */
		if (!w->done) {
			atomic_store_explicit(&w->have_done, 1, memory_order_relaxed);
			if (write(w->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
				perror("orfs-server: eventfd write");
		}
		j->next = w->done;
		w->done = j;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_start(struct workers *w, int nthreads)
{
	int i, ret;

	memset(w, 0, sizeof(*w));
	atomic_init(&w->have_done, 0);
	w->todo_tail = &w->todo;
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		perror("orfs-server: eventfd");
		return -1;
	}
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

/* Stops after the queued jobs have run. */
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
	if (w->efd >= 0)
		close(w->efd);
	w->efd = -1;
}

void workers_submit(struct workers *w, struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&w->lock);
	*w->todo_tail = j;
	w->todo_tail = &j->next;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

struct job *workers_reap(struct workers *w)
{
	struct job *list;
	uint64_t n;

	pthread_mutex_lock(&w->lock);
	list = w->done;
	w->done = NULL;
	atomic_store_explicit(&w->have_done, 0, memory_order_relaxed);
	if (list && read(w->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		perror("orfs-server: eventfd read");
	pthread_mutex_unlock(&w->lock);
	return list;
}
