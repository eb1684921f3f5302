/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * I/O worker threads. Progress threads submit jobs (one backend call
 * each); workers run them and hand each back through the done box it names
 * (a list and an eventfd its progress thread waits on). Jobs never touch
 * fabric state.
 *
 * Fair between hosts: each peer (a key of the host a job's connection
 * comes from) has its queue, and the workers take one job from each
 * queue in turn, so that a host with many connections and long jobs
 * delays another host's next job by one job at most, not by its whole
 * backlog.
 */
#ifndef ORFS_SERVER_WORKERS_H
#define ORFS_SERVER_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

struct job;

/* Runs on a worker; returns 0 or -errno, stored in job->result. */
typedef int (*job_fn)(struct job *j);

struct done_box;

struct job {
	struct job		*next;
	struct done_box		*box;		/* where it goes when done */
	job_fn			run;
	int			result;
	uint64_t		peer;		/* whose queue: a key of its host (0: the server's) */
	void			*owner;		/* the rest is the submitter's */
	int			tag;
	int			kind;
	const void		*target;	/* a volume or a file export */
	int			fd;
	int			pipe;		/* splice_read(): the pipe's write end */
	void			*buf;
	uint64_t		off;
	uint32_t		len;
	int			fua;
};

/* Finished jobs for one reaper. */
struct done_box {
	pthread_mutex_t		lock;
	struct job		*done;
	atomic_int		have_done;	/* done is not empty: a hint for a polling reaper */
	int			efd;		/* readable while done is not empty */
};

/* The jobs of one peer not yet run. */
struct wq {
	uint64_t		peer;
	struct job		*todo, **tail;
	unsigned int		running;	/* its jobs on a worker now */
	int			in_turn;	/* in the workers' turn */
	struct wq		*hnext;		/* hash chain */
	struct wq		*tnext;		/* the turn */
};

#define WQ_BUCKETS	256

struct workers {
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	struct wq		*turn, **turn_tail;	/* queues with jobs, served in turn */
	struct wq		*hash[WQ_BUCKETS];
	struct wq		spare;		/* every peer's, while memory is short */
	unsigned int		nqueues;	/* peers with jobs queued or running */
	struct done_box		box;		/* for jobs submitted without one */
	int			stop;
	int			nthreads;
	pthread_t		*threads;
};

int box_init(struct done_box *b);
void box_destroy(struct done_box *b);
/* Take every finished job of B (in no particular order); clears the eventfd. */
struct job *box_reap(struct done_box *b);

/* Are there finished jobs in B to reap? A hint, without the lock or a system call. */
static inline int box_have_done(struct done_box *b)
{
	return atomic_load_explicit(&b->have_done, memory_order_relaxed);
}

int workers_start(struct workers *w, int nthreads);
/* Stops after the queued jobs have run (and went to their boxes). */
void workers_stop(struct workers *w);
/*
 * Run J on a worker, in the turn of its peer (J->peer); it goes to BOX
 * when done (NULL: W's own box).
 */
void workers_submit(struct workers *w, struct job *j, struct done_box *box);

/* W's own box: the jobs submitted without one. */
static inline struct job *workers_reap(struct workers *w)
{
	return box_reap(&w->box);
}

static inline int workers_have_done(struct workers *w)
{
	return box_have_done(&w->box);
}

#endif /* ORFS_SERVER_WORKERS_H */
