// SPDX-License-Identifier: GPL-2.0-only
/* Unit tests of the server's byte-range locks across clients (server/locks.c). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "orfs/uapi/orfs_proto.h"
#include "server/locks.h"
#include "tests/unit/unit.h"

#define A	0xaaULL		/* two clients */
#define B	0xbbULL
#define R	ORFS_LOCK_READ
#define W	ORFS_LOCK_WRITE
#define U	ORFS_LOCK_UNLOCK
#define END	UINT64_MAX

static int lk_do(struct locks *lk, uint64_t client, uint64_t owner, uint64_t start, uint64_t end,
		 uint32_t type, uint32_t flags, time_t now, struct lk_want *held)
{
	struct lk_want w = { client, owner, start, end, type, flags }, h;

	return locks_apply(lk, 1, 42, &w, now, held ? held : &h);
}

static void test_locks_conflicts(void)
{
	struct locks lk;
	struct lk_want h;

	locks_init(&lk, 10);
	locks_attach(&lk, A, 1);
	locks_attach(&lk, B, 1);
	/* Readers share; a writer waits for every other owner. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 99, R, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 50, 149, R, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 100, &h), EAGAIN);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 120, 129, W, 0, 100, NULL), EAGAIN);
	/* The same owner number of another client is another owner. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 200, END, W, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 1000, 1000, R, 0, 100, NULL), EAGAIN);
	/* TEST names the lock in the way, or none. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 300, 400, W, ORFS_LOCK_TEST, 100, &h), 0);
	CU_ASSERT_EQUAL(h.type, W);
	CU_ASSERT_EQUAL(h.start, 200);
	CU_ASSERT_EQUAL(h.end, END);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 150, 199, W, ORFS_LOCK_TEST, 100, &h), 0);
	CU_ASSERT_EQUAL(h.type, U);
	/* An upgrade of one's own lock needs nobody else in the range. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 49, W, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 99, W, 0, 100, NULL), EAGAIN);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 2);	/* W 0-49, R 50-99 */
	/* Unlocking the middle of a range splits it. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 60, 69, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(locks_count(&lk, B), 3);	/* R 50-59, R 70-149, W 200- */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 60, 69, W, 0, 100, NULL), EAGAIN);	/* A's R 50-99 */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 50, 99, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 60, 69, W, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 59, 59, R, 0, 100, NULL), 0);	/* B's read */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 70, 70, W, 0, 100, NULL), EAGAIN);
	/* Adjacent ranges of one owner and type become one. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 3, 500, 509, R, 0, 100, NULL), EAGAIN);	/* B's W 200- */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 200, END, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 3, 500, 509, R, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 3, 510, 519, R, 0, 100, &h), 0);
	CU_ASSERT_EQUAL(h.start, 500);
	CU_ASSERT_EQUAL(h.end, 519);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 3, 0, END, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 3);	/* 1: W 0-49; 2: W 60-69, R 59 */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, END, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 0, END, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, END, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(locks_count(&lk, 0), 0);
	/* Bad requests. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 10, 9, R, 0, 100, NULL), EINVAL);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, 7, 0, 100, NULL), EINVAL);
	/* Testing for an unlock means nothing (fcntl(F_GETLK) with F_UNLCK) and unlocks nothing. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, R, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, U, ORFS_LOCK_TEST, 100, NULL), EINVAL);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 1);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, U, 0, 100, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, 0xcc, 1, 0, 9, R, 0, 100, NULL), ENOLCK);	/* no session */
	locks_destroy(&lk);
}

static void test_locks_lease_grace(void)
{
	struct locks lk;
	struct lk_want h;
	int i;

	/* A server just started: 5 s in which only reclaims are taken. */
	locks_init(&lk, 10);
	locks_grace(&lk, 5, 100);
	locks_attach(&lk, A, 1);
	locks_attach(&lk, B, 1);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 101, NULL), EBUSY);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, ORFS_LOCK_TEST, 101, NULL), EBUSY);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, W, ORFS_LOCK_RECLAIM, 101, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, U, 0, 101, NULL), 0);	/* unlocks go */
	/* 100 may have been 100.9: 105 is still in the grace period. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 105, NULL), EBUSY);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 106, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 20, 29, W, ORFS_LOCK_RECLAIM, 106, NULL), ENOLCK);
	/* A's connections close: its lock stays for the lease, then goes. */
	locks_detach(&lk, A, 110);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 119, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 120, &h), 0);
	CU_ASSERT_EQUAL(lk.expired, 1);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 0);
	/* A client that comes back within the lease keeps its locks. */
	locks_detach(&lk, B, 130);
	locks_attach(&lk, B, 1);
	locks_attach(&lk, A, 1);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, R, 0, 200, NULL), EAGAIN);
	/* Bounded: a client's ranges. */
	for (i = 0; i < LOCKS_CLIENT_MAX; i++)
		if (lk_do(&lk, A, 2, 100 + 2 * (uint64_t)i, 100 + 2 * (uint64_t)i, R, 0, 200, NULL))
			break;
	CU_ASSERT(i >= LOCKS_CLIENT_MAX - 2 && i < LOCKS_CLIENT_MAX);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 50, 50, R, 0, 200, NULL), ENOLCK);
	/* Unlocking, even with a split, is never refused. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 2, 0, END, U, 0, 200, NULL), 0);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 0);
	locks_destroy(&lk);
}

static void test_locks_revoked(void)
{
	struct locks lk;
	uint64_t i;

	locks_init(&lk, 10);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, B, 1), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, W, 0, 100, NULL), 0);
	/* Away within its lease, or past it with nobody in the way: not told. */
	locks_detach(&lk, A, 110);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 115, NULL), EAGAIN);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 0);
	locks_detach(&lk, A, 120);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 20, 29, W, 0, 140, NULL), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 0);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 1);
	CU_ASSERT_EQUAL(locks_write_refused(&lk, A, 1, 42), 0);
	/* Past its lease, and in B's way: dropped, and told at every SESSION... */
	locks_detach(&lk, A, 150);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, 9, W, 0, 160, NULL), 0);
	CU_ASSERT_EQUAL(locks_count(&lk, A), 0);
	CU_ASSERT_EQUAL(lk.nrevoked, 1);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 1);
	locks_detach(&lk, A, 161);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 1);
	/* ...its writes to that file refused, not to others nor B's... */
	CU_ASSERT_EQUAL(locks_write_refused(&lk, A, 1, 42), 1);
	CU_ASSERT_EQUAL(locks_write_refused(&lk, A, 1, 43), 0);
	CU_ASSERT_EQUAL(locks_write_refused(&lk, A, 2, 42), 0);
	CU_ASSERT_EQUAL(locks_write_refused(&lk, B, 1, 42), 0);
	/* ...whatever LOCK it sends (its unlock, a test)... */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, U, 0, 162, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 0, 0, 0, R, ORFS_LOCK_TEST, 162, NULL), 0);
	CU_ASSERT_EQUAL(lk.nrevoked, 1);
	CU_ASSERT_EQUAL(locks_write_refused(&lk, A, 1, 42), 1);
	/* ...until it says it saw it. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 0, 0, 0, R, ORFS_LOCK_TEST | ORFS_LOCK_REVOKED_SEEN, 162,
			      NULL), 0);
	CU_ASSERT_EQUAL(lk.nrevoked, 0);
	CU_ASSERT_EQUAL(locks_write_refused(&lk, A, 1, 42), 0);
	locks_detach(&lk, A, 163);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 0);
	locks_detach(&lk, A, 164);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, END, U, 0, 165, NULL), 0);

	/* Bounded: past LOCKS_REVOKED_MAX, the client gone longest is forgotten. */
	for (i = 0; i <= LOCKS_REVOKED_MAX; i++) {
		locks_attach(&lk, 1000 + i, 1000 + i);	/* a host each: a host's ids are bounded */
		CU_ASSERT_EQUAL_FATAL(lk_do(&lk, 1000 + i, 1, i, i, R, 0, 200, NULL), 0);
		locks_detach(&lk, 1000 + i, (time_t)(300 + i));
	}
	/* Byte by byte, so that they go in the order they left. */
	for (i = 0; i <= LOCKS_REVOKED_MAX; i++)
		CU_ASSERT_EQUAL_FATAL(lk_do(&lk, B, 1, i, i, W, 0, 10000, NULL), 0);
	CU_ASSERT_EQUAL(lk.nrevoked, LOCKS_REVOKED_MAX);
	CU_ASSERT_EQUAL(locks_count(&lk, B), 1);
	CU_ASSERT_EQUAL(locks_attach(&lk, 1000, 1000), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, 1001, 1001), 1);
	CU_ASSERT_EQUAL(locks_attach(&lk, 1000 + LOCKS_REVOKED_MAX, 1000 + LOCKS_REVOKED_MAX), 1);
	locks_destroy(&lk);
}

/*
 * A client id is bound to the host that opened it; one host holds a
 * bounded number of ids and of ranges, so that rotating ids fills
 * neither the table nor another host's share.
 */
static void test_locks_peers(void)
{
	struct locks lk;
	uint64_t i;
	int err = 0;

	locks_init(&lk, 60);
	locks_grace(&lk, 0, 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, 7, 100), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, 7, 200), -EPERM);	/* another host's id */
	CU_ASSERT_EQUAL(locks_attach(&lk, 7, 100), 0);		/* its own host's, again */
	locks_detach(&lk, 7, 1);
	locks_detach(&lk, 7, 1);
	/* Host 200 rotates ids: LOCKS_PEER_CLIENTS at once, then refused. */
	for (i = 0; i < LOCKS_PEER_CLIENTS; i++)
		CU_ASSERT_EQUAL_FATAL(locks_attach(&lk, 5000 + i, 200), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, 5000 + LOCKS_PEER_CLIENTS, 200), -ENOLCK);
	/* Its ranges stop at LOCKS_PEER_MAX, across its ids. */
	for (i = 0; i < LOCKS_PEER_CLIENTS && !err; i++) {
		uint64_t k;

		for (k = 0; k < LOCKS_CLIENT_MAX / 2 && !err; k++)
			err = lk_do(&lk, 5000 + i, 1, 2 * (i * LOCKS_CLIENT_MAX + k),
				    2 * (i * LOCKS_CLIENT_MAX + k), W, 0, 2, NULL);
	}
	CU_ASSERT_EQUAL(err, ENOLCK);
	CU_ASSERT(locks_count(&lk, 0) <= LOCKS_PEER_MAX);
	CU_ASSERT(locks_count(&lk, 0) >= LOCKS_PEER_MAX - 2);
	CU_ASSERT(lk.refused >= 2);
	/* Host 100 still locks. */
	CU_ASSERT_EQUAL(locks_attach(&lk, 8, 100), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, 8, 2, 1ULL << 62, (1ULL << 62) + 10, W, 0, 3, NULL), 0);
	/* Host 200's ids that leave with no lock free their places. */
	locks_detach(&lk, 5000 + LOCKS_PEER_CLIENTS - 1, 4);
	CU_ASSERT_EQUAL(locks_attach(&lk, 9, 200), 0);
	/*
	 * Its other ids all gone: within their lease their locks stay and the
	 * bound holds; past it, the room a lock needs is taken from theirs.
	 */
	for (i = 0; i < LOCKS_PEER_CLIENTS - 1; i++)
		locks_detach(&lk, 5000 + i, 4);
	CU_ASSERT_EQUAL(lk_do(&lk, 9, 1, 3, 3, W, 0, 30, NULL), ENOLCK);
	CU_ASSERT_EQUAL(lk.expired, 0);
	CU_ASSERT_EQUAL(lk_do(&lk, 9, 1, 3, 3, W, 0, 4 + 60, NULL), 0);
	CU_ASSERT(lk.expired >= 1);
	CU_ASSERT(locks_count(&lk, 9) == 1);
	CU_ASSERT(locks_count(&lk, 0) < LOCKS_PEER_MAX);
	locks_destroy(&lk);
}

static void test_locks_deadlock(void)
{
	struct locks lk;
	const uint32_t WT = ORFS_LOCK_WAIT;
	const time_t t = 100, fresh = LOCKS_WAIT_FRESH;

	locks_init(&lk, 60);
	locks_attach(&lk, A, 1);
	locks_attach(&lk, B, 1);
	/* A's owner 1 holds byte 0, B's owner 2 byte 1, B's owner 3 byte 2. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 0, W, 0, t, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 1, 1, W, 0, t, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 3, 2, 2, W, 0, t, NULL), 0);
	/* A1 waits for byte 1: remembered. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 1, 1, W, WT, t, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk.nwaits, 1);
	/* B2 asking for byte 0 without waiting: no deadlock, it does not wait. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, W, 0, t, NULL), EAGAIN);
	/* Waiting, it would close the chain. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, W, WT, t + 1, NULL), EDEADLK);
	/* A1 gives up (a signal) and says so: B2's wait closes no chain now. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 1, 1, W, WT | ORFS_LOCK_TEST, t + 1, NULL), 0);
	CU_ASSERT_EQUAL(lk.nwaits, 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, W, WT, t + 1, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk.nwaits, 1);
	/* A waiter that stopped asking is taken to wait no more... */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, W, WT, t + fresh + 1, NULL), EAGAIN);
	/* ...and now B2 waits: A1 asking again closes it. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 1, 1, W, WT, t + fresh + 2, NULL), EDEADLK);
	/* A1 lets byte 0 go: B2 waits for nothing held, no deadlock through it. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 0, U, 0, t + fresh + 2, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 1, 1, W, WT, t + fresh + 2, NULL), EAGAIN);
	/* B2 has byte 0 now, and asks no more. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, W, WT, t + fresh + 2, NULL), 0);
	CU_ASSERT_EQUAL(lk.nwaits, 1);
	/* A ring of three: A1 waits for B2 (byte 1), B2 for B3 (byte 2), B3 for A1. */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, U, 0, t + fresh + 2, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 0, W, 0, t + fresh + 2, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 2, 2, W, WT, t + fresh + 2, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 1, 1, W, WT, t + fresh + 2, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 3, 0, 0, R, WT, t + fresh + 2, NULL), EDEADLK);
	CU_ASSERT_EQUAL(lk.nwaits, 2);
	/* A client whose locks go at the end of its lease takes its waits along. */
	locks_detach(&lk, A, t + fresh + 3);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 3, 0, 0, R, WT, t + fresh + 3 + 60, NULL), 0);
	CU_ASSERT_EQUAL(lk.nwaits, 1);
	locks_destroy(&lk);
}

/*
 * A request held by locks_apply_wait() on a thread of its own: a
 * process's (WAIT | HOLD), or for owners from 100 on an OFD or flock()
 * lock's (HOLD).
 */
struct held_call {
	struct locks	*lk;
	struct lk_want	w;
	unsigned int	hold_ms;
	int		err;
	double		secs;	/* how long it took */
};

static double mono_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *held_run(void *arg)
{
	struct held_call *hc = arg;
	struct timespec ts;
	struct lk_want h;
	double t0 = mono_secs();

	clock_gettime(CLOCK_MONOTONIC, &ts);
	hc->err = locks_apply_wait(hc->lk, 1, 42, &hc->w, ts.tv_sec, &h, hc->hold_ms);
	hc->secs = mono_secs() - t0;
	return NULL;
}

static int held_start(pthread_t *t, struct held_call *hc, struct locks *lk, uint64_t client,
		      uint64_t owner, uint64_t start, uint64_t end, unsigned int hold_ms)
{
	*hc = (struct held_call){ .lk = lk, .hold_ms = hold_ms,
				  .w = { client, owner, start, end, W,
					 owner >= 100 ? ORFS_LOCK_HOLD :
					 ORFS_LOCK_WAIT | ORFS_LOCK_HOLD } };
	return pthread_create(t, NULL, held_run, hc);
}

/* Until N requests are held (or 10 s went by): 1 when they are. */
static int holding(struct locks *lk, uint32_t n)
{
	double t0 = mono_secs();
	uint32_t now;

	do {
		pthread_mutex_lock(&lk->mu);
		now = lk->holding;
		pthread_mutex_unlock(&lk->mu);
		if (now == n)
			return 1;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	} while (mono_secs() - t0 < 10);
	return 0;
}

static void test_locks_hold(void)
{
	const uint32_t WH = ORFS_LOCK_WAIT | ORFS_LOCK_HOLD;
	struct held_call hc, hc2;
	struct timespec ts;
	struct locks lk;
	pthread_t t, t2;
	time_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec;
	locks_init(&lk, 60);
	locks_attach(&lk, A, 1);
	locks_attach(&lk, B, 1);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, W, 0, now, NULL), 0);
	/* No request is held by default: EAGAIN at once. */
	CU_ASSERT_EQUAL(held_start(&t, &hc, &lk, B, 1, 5, 5, 60000), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(hc.err, EAGAIN);
	CU_ASSERT(hc.secs < 30);
	CU_ASSERT_EQUAL(lk.nwaits, 1);	/* it waits all the same */
	locks_hold_max(&lk, 1);
	/* Held, it gets the lock when A lets it go, long before its time is up. */
	CU_ASSERT_EQUAL(held_start(&t, &hc, &lk, B, 1, 5, 5, 60000), 0);
	CU_ASSERT(holding(&lk, 1));
	/* One at most: a second waiter is answered at once. */
	CU_ASSERT_EQUAL(held_start(&t2, &hc2, &lk, B, 2, 0, 0, 60000), 0);
	pthread_join(t2, NULL);
	CU_ASSERT_EQUAL(hc2.err, EAGAIN);
	CU_ASSERT(hc2.secs < 30);
	/* A lock elsewhere, and a lock set, wake it for nothing: it stays. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 100, 100, W, 0, now, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 100, 100, U, 0, now, NULL), 0);
	CU_ASSERT(holding(&lk, 1));
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 9, U, 0, now, NULL), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(hc.err, 0);
	CU_ASSERT(hc.secs < 30);
	CU_ASSERT_EQUAL(locks_count(&lk, B), 1);
	CU_ASSERT_EQUAL(lk.nwaits, 1);	/* B2's, from the request answered at once */
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 0, 0, W, ORFS_LOCK_WAIT | ORFS_LOCK_TEST, now, NULL), 0);
	CU_ASSERT_EQUAL(lk.nwaits, 0);
	/* The owner's word that it stopped waiting ends the hold: EAGAIN. */
	CU_ASSERT_EQUAL(held_start(&t, &hc, &lk, A, 1, 5, 5, 60000), 0);
	CU_ASSERT(holding(&lk, 1));
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 5, 5, W, ORFS_LOCK_WAIT | ORFS_LOCK_TEST, now, NULL), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(hc.err, EAGAIN);
	CU_ASSERT(hc.secs < 30);
	CU_ASSERT_EQUAL(lk.holding, 0);
	/* An OFD or flock() waiter is held the same, without a wait recorded. */
	CU_ASSERT_EQUAL(held_start(&t, &hc, &lk, A, 100, 5, 5, 60000), 0);
	CU_ASSERT(holding(&lk, 1));
	CU_ASSERT_EQUAL(lk.nwaits, 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, END, U, 0, now, NULL), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(hc.err, 0);
	CU_ASSERT(hc.secs < 30);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 5, 5, W, 0, now, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk_do(&lk, A, 100, 0, END, U, 0, now, NULL), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 5, 5, W, 0, now, NULL), 0);
	/* Held for a wait whose time runs out: EAGAIN, the wait kept. */
	CU_ASSERT_EQUAL(lk_do(&lk, A, 1, 0, 0, W, 0, now, NULL), 0);
	CU_ASSERT_EQUAL(held_start(&t, &hc, &lk, A, 1, 5, 5, 20), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(hc.err, EAGAIN);
	CU_ASSERT_EQUAL(lk.nwaits, 1);
	CU_ASSERT_EQUAL(lk.holding, 0);
	/* A deadlock (B1 waits for A1, which waits for B1) is answered, not held. */
	CU_ASSERT_EQUAL(locks_apply_wait(&lk, 1, 42, &(struct lk_want){ B, 1, 0, 0, W, WH }, now,
					 &(struct lk_want){ 0 }, 60000), EDEADLK);
	locks_destroy(&lk);
}

/* One host's clients have LOCKS_PEER_WAITS waits recorded at most; another's still are. */
static void test_locks_waits_peer(void)
{
	struct locks lk;
	uint64_t i;
	int err = EAGAIN;

	locks_init(&lk, 60);
	locks_grace(&lk, 0, 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, B, 2), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 1, 0, END, W, 0, 1, NULL), 0);
	for (i = 0; i < LOCKS_PEER_WAITS + 10 && err == EAGAIN; i++)
		err = lk_do(&lk, A, 100 + i, 5, 5, W, ORFS_LOCK_WAIT, 1, NULL);
	CU_ASSERT_EQUAL(err, EAGAIN);
	CU_ASSERT_EQUAL(lk.nwaits, LOCKS_PEER_WAITS);
	CU_ASSERT(lk.refused >= 10);
	CU_ASSERT_EQUAL(lk_do(&lk, B, 2, 5, 5, W, ORFS_LOCK_WAIT, 1, NULL), EAGAIN);
	CU_ASSERT_EQUAL(lk.nwaits, LOCKS_PEER_WAITS + 1);
	/* A client that leaves with no lock takes its waits along. */
	locks_detach(&lk, A, 2);
	CU_ASSERT_EQUAL(lk.nwaits, 1);
	locks_destroy(&lk);
}

/*
 * One host's clients hold half the held requests at most: with four, a
 * third waiter of host 1 is answered at once, while host 2's is held.
 */
static void test_locks_hold_peer(void)
{
	const uint64_t C = 0xc1, D = 0xd1;
	struct held_call hc[4];
	struct timespec ts;
	struct locks lk;
	pthread_t t[4];
	time_t now;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = ts.tv_sec;
	locks_init(&lk, 60);
	locks_hold_max(&lk, 4);
	CU_ASSERT_EQUAL(locks_attach(&lk, A, 1), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, B, 1), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, C, 1), 0);
	CU_ASSERT_EQUAL(locks_attach(&lk, D, 2), 0);
	CU_ASSERT_EQUAL(lk_do(&lk, D, 9, 0, END, W, 0, now, NULL), 0);
	CU_ASSERT_EQUAL(held_start(&t[0], &hc[0], &lk, A, 1, 0, 0, 60000), 0);
	CU_ASSERT_EQUAL(held_start(&t[1], &hc[1], &lk, B, 1, 1, 1, 60000), 0);
	CU_ASSERT(holding(&lk, 2));
	CU_ASSERT_EQUAL(held_start(&t[2], &hc[2], &lk, C, 1, 2, 2, 60000), 0);
	pthread_join(t[2], NULL);
	CU_ASSERT_EQUAL(hc[2].err, EAGAIN);
	CU_ASSERT(hc[2].secs < 30);
	CU_ASSERT_EQUAL(lk.hold_refused, 1);
	/* Host 2's own waiter (on a lock host 2 holds under another owner) is held. */
	CU_ASSERT_EQUAL(held_start(&t[3], &hc[3], &lk, D, 1, 3, 3, 60000), 0);
	CU_ASSERT(holding(&lk, 3));
	CU_ASSERT_EQUAL(lk_do(&lk, D, 9, 0, END, U, 0, now, NULL), 0);
	for (i = 0; i < 4; i++)
		if (i != 2) {
			pthread_join(t[i], NULL);
			CU_ASSERT_EQUAL(hc[i].err, 0);
		}
	CU_ASSERT_EQUAL(lk.holding, 0);
	locks_destroy(&lk);
}

int unit_add_locks_suite(void)
{
	CU_pSuite s = CU_add_suite("byte-range locks", NULL, NULL);

	if (!s || !CU_add_test(s, "POSIX semantics between owners and clients",
			       test_locks_conflicts) ||
	    !CU_add_test(s, "grace period, lease, bounds", test_locks_lease_grace) ||
	    !CU_add_test(s, "a client whose locks were dropped is told", test_locks_revoked) ||
	    !CU_add_test(s, "a chain of waiters closing on itself: EDEADLK", test_locks_deadlock) ||
	    !CU_add_test(s, "a waiter's request held until the lock is free", test_locks_hold) ||
	    !CU_add_test(s, "one host's waiters hold half the holds at most", test_locks_hold_peer) ||
	    !CU_add_test(s, "one host's waits recorded are bounded", test_locks_waits_peer) ||
	    !CU_add_test(s, "ids bound to their host; a host's ids and ranges bounded", test_locks_peers))
		return -1;
	return 0;
}
