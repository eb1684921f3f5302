// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the I/O worker threads (server/workers.c). */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "server/workers.h"
#include "tests/unit/unit.h"

#define NJOBS	64

static int job_square(struct job *j)
{
	return (int)(j->off * j->off);
}

/* Is the workers' eventfd readable within MS milliseconds? */
static int efd_readable(const struct workers *w, int ms)
{
	struct pollfd p = { .fd = w->box.efd, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void init_jobs(struct job *jobs, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].run = job_square;
		jobs[i].off = (uint64_t)i;
		jobs[i].tag = i;
		jobs[i].result = -1;
	}
}

static void test_workers_done(void)
{
	struct workers w;
	struct job jobs[NJOBS], *j;
	int seen[NJOBS] = { 0 };
	int i, got = 0;

	CU_ASSERT_EQUAL_FATAL(workers_start(&w, 4), 0);
	CU_ASSERT_FALSE(efd_readable(&w, 0));
	CU_ASSERT_PTR_NULL(workers_reap(&w));
	init_jobs(jobs, NJOBS);
	/* One at a time: a lone finished job signals. */
	for (i = 0; i < 4; i++) {
		workers_submit(&w, &jobs[i], NULL);
		CU_ASSERT_TRUE_FATAL(efd_readable(&w, 5000));
		j = workers_reap(&w);
		CU_ASSERT_PTR_EQUAL_FATAL(j, &jobs[i]);
		CU_ASSERT_PTR_NULL(j->next);
		CU_ASSERT_EQUAL(j->result, i * i);
		CU_ASSERT_FALSE(efd_readable(&w, 0));
	}
	/* Many at once: every one is reaped once, whatever the interleaving. */
	init_jobs(jobs, NJOBS);
	for (i = 0; i < NJOBS; i++)
		workers_submit(&w, &jobs[i], NULL);
	/* Every finished job not yet reaped keeps the eventfd readable. */
	while (got < NJOBS && efd_readable(&w, 5000)) {
		CU_ASSERT_TRUE(workers_have_done(&w));
		for (j = workers_reap(&w); j; j = j->next) {
			CU_ASSERT_EQUAL(j->result, j->tag * j->tag);
			CU_ASSERT_FALSE(seen[j->tag]);
			seen[j->tag] = 1;
			got++;
		}
	}
	CU_ASSERT_EQUAL(got, NJOBS);
	/* All reaped: nothing left to signal. */
	CU_ASSERT_FALSE(efd_readable(&w, 0));
	CU_ASSERT_FALSE(workers_have_done(&w));
	workers_stop(&w);
}

static void test_workers_stop(void)
{
	struct workers w;
	struct job jobs[8];
	int i;

	CU_ASSERT_EQUAL_FATAL(workers_start(&w, 2), 0);
	init_jobs(jobs, 8);
	for (i = 0; i < 8; i++)
		workers_submit(&w, &jobs[i], NULL);
	workers_stop(&w);	/* runs what was queued first */
	for (i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(jobs[i].result, i * i);
	CU_ASSERT_EQUAL(w.box.efd, -1);
}

/* Two reapers (progress threads) share the workers: each gets its own jobs back. */
static void test_workers_boxes(void)
{
	struct done_box a, b;
	struct workers w;
	struct job jobs[16], *j;
	int i, got_a = 0, got_b = 0, tries;

	CU_ASSERT_EQUAL_FATAL(box_init(&a), 0);
	CU_ASSERT_EQUAL_FATAL(box_init(&b), 0);
	CU_ASSERT_EQUAL_FATAL(workers_start(&w, 3), 0);
	init_jobs(jobs, 16);
	for (i = 0; i < 16; i++)
		workers_submit(&w, &jobs[i], i % 2 ? &b : &a);
	for (tries = 0; tries < 500 && got_a + got_b < 16; tries++) {
		struct pollfd p[2] = { { .fd = a.efd, .events = POLLIN },
				       { .fd = b.efd, .events = POLLIN } };

		if (poll(p, 2, 10) < 0)
			break;
		for (j = box_reap(&a); j; j = j->next) {
			CU_ASSERT_EQUAL(j->tag % 2, 0);
			CU_ASSERT_EQUAL(j->result, j->tag * j->tag);
			got_a++;
		}
		for (j = box_reap(&b); j; j = j->next) {
			CU_ASSERT_EQUAL(j->tag % 2, 1);
			got_b++;
		}
	}
	CU_ASSERT_EQUAL(got_a, 8);
	CU_ASSERT_EQUAL(got_b, 8);
	CU_ASSERT_PTR_NULL(workers_reap(&w));	/* nothing went to the default box */
	CU_ASSERT_FALSE(box_have_done(&a));
	workers_stop(&w);
	box_destroy(&a);
	box_destroy(&b);
}

/* The order jobs ran in (by tag), and a gate the first waits at. */
static int ran[32];
static atomic_int nran;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_reached;

static int job_record(struct job *j)
{
	if (j->tag == 0) {
		pthread_mutex_lock(&gate_mu);
		gate_reached = 1;
		pthread_cond_broadcast(&gate_cv);
		while (!gate_open)
			pthread_cond_wait(&gate_cv, &gate_mu);
		pthread_mutex_unlock(&gate_mu);
	}
	ran[atomic_fetch_add(&nran, 1)] = j->tag;
	return 0;
}

/*
 * One host's backlog does not delay another's job: with one worker busy
 * on host 1's job and ten more of host 1 queued, host 2's job runs after
 * one of them, not after all.
 */
static void test_workers_fair(void)
{
	struct workers w;
	struct job jobs[12], *j;
	int i, got = 0, pos = -1;

	CU_ASSERT_EQUAL_FATAL(workers_start(&w, 1), 0);
	init_jobs(jobs, 12);
	atomic_store(&nran, 0);
	gate_open = gate_reached = 0;
	for (i = 0; i < 12; i++) {
		jobs[i].run = job_record;
		jobs[i].peer = i == 11 ? 2 : 1;
	}
	workers_submit(&w, &jobs[0], NULL);
	pthread_mutex_lock(&gate_mu);
	while (!gate_reached)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	for (i = 1; i < 12; i++)
		workers_submit(&w, &jobs[i], NULL);
	pthread_mutex_lock(&gate_mu);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	while (got < 12 && efd_readable(&w, 5000))
		for (j = workers_reap(&w); j; j = j->next)
			got++;
	CU_ASSERT_EQUAL(got, 12);
	for (i = 0; i < 12; i++)
		if (ran[i] == 11)
			pos = i;
	CU_ASSERT_EQUAL(ran[0], 0);
	CU_ASSERT(pos >= 1 && pos <= 2);
	workers_stop(&w);
	CU_ASSERT_EQUAL(w.nqueues, 0);	/* every host's queue forgotten once empty */
}

int unit_add_workers_suite(void)
{
	CU_pSuite s = CU_add_suite("worker threads", NULL, NULL);

	if (!s ||
	    !CU_add_test(s, "each job reaped once, eventfd readable while any is done",
			 test_workers_done) ||
	    !CU_add_test(s, "stop runs the queued jobs", test_workers_stop) ||
	    !CU_add_test(s, "jobs go back to the box they name", test_workers_boxes) ||
	    !CU_add_test(s, "hosts take turns: a backlog delays another host by one job",
			 test_workers_fair))
		return -1;
	return 0;
}
