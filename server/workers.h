/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * I/O worker threads. The progress thread submits jobs (one backend call
 * each); workers run them and hand them back through a done list and an
 * eventfd the progress thread waits on. Jobs never touch fabric state.
 */
#ifndef ORFS_SERVER_WORKERS_H
#define ORFS_SERVER_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct job;

/* Runs on a worker; returns 0 or -errno, stored in job->result. */
typedef int (*job_fn)(struct job *j);

struct job {
	struct job		*next;
	job_fn			run;
	int			result;
	void			*owner;		/* the rest is the submitter's */
	int			tag;
	int			kind;
	const void		*target;	/* a volume or a file export */
	int			fd;
	void			*buf;
	uint64_t		off;
	uint32_t		len;
	int			fua;
};

struct workers {
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	struct job		*todo, **todo_tail;
	struct job		*done;
	atomic_int		have_done;	/* done is not empty: a hint for a polling reaper */
	int			efd;		/* readable while done is not empty */
	int			stop;
	int			nthreads;
	pthread_t		*threads;
};

int workers_start(struct workers *w, int nthreads);
void workers_stop(struct workers *w);
void workers_submit(struct workers *w, struct job *j);
/* Take every finished job (in no particular order); clears the eventfd. */
struct job *workers_reap(struct workers *w);

/* Are there finished jobs to reap? A hint, without the lock or a system call. */
static inline int workers_have_done(struct workers *w)
{
	return atomic_load_explicit(&w->have_done, memory_order_relaxed);
}

#endif /* ORFS_SERVER_WORKERS_H */
