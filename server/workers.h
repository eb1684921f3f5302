/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * I/O worker threads. The progress thread submits jobs (one backend call
 * each); workers run them and hand them back through a done list and an
 * eventfd the progress thread waits on. Jobs never touch fabric state.
 */
#ifndef ORFS_SERVER_WORKERS_H
#define ORFS_SERVER_WORKERS_H

#include <pthread.h>
#include <stdint.h>

struct volume;

enum job_kind { JOB_READ, JOB_WRITE, JOB_FLUSH, JOB_DISCARD, JOB_WRITE_ZEROES };

struct job {
	struct job		*next;
	enum job_kind		kind;
	const struct volume	*vol;
	void			*buf;
	uint64_t		off;
	uint32_t		len;
	int			fua;
	int			result;		/* 0 or -errno, set by the worker */
	void			*owner;		/* for the submitter */
	int			tag;		/* for the submitter */
};

struct workers {
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	struct job		*todo, **todo_tail;
	struct job		*done;
	int			efd;		/* readable when done is not empty */
	int			stop;
	int			nthreads;
	pthread_t		*threads;
};

int workers_start(struct workers *w, int nthreads);
void workers_stop(struct workers *w);
void workers_submit(struct workers *w, struct job *j);
/* Take every finished job (in no particular order); clears the eventfd. */
struct job *workers_reap(struct workers *w);

#endif /* ORFS_SERVER_WORKERS_H */
