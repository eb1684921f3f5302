/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Byte-range locks across clients (ORFS_OP_LOCK): POSIX semantics per
 * (client, owner), held in memory. A client's locks outlive its
 * connections for a lease, so that a client that reconnects keeps them;
 * after that the first request they stand in the way of drops them, and
 * the client is told when it comes back. A
 * server that starts has none, and for a grace period takes only the
 * locks clients had (reclaims), so that nobody takes one first.
 *
 * Bounded: LOCKS_MAX ranges in all, LOCKS_PEER_MAX a peer (the host a
 * client's connections come from), LOCKS_CLIENT_MAX a client (ENOLCK past
 * that); LOCKS_PEER_CLIENTS client ids a peer, each bound to its peer.
 * At the bound of all or of a peer, the locks of clients (of that peer)
 * gone for longer than the lease are dropped to make room first.
 */
#ifndef ORFS_SERVER_LOCKS_H
#define ORFS_SERVER_LOCKS_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#define LOCKS_BUCKETS		1024
#define LOCKS_MAX		65536
#define LOCKS_CLIENT_MAX	4096
#define LOCKS_PEER_MAX		16384	/* ranges of one peer's clients */
#define LOCKS_PEER_CLIENTS	256	/* client ids one peer holds at once */
#define LOCKS_LEASE		60	/* seconds, default */
#define LOCKS_REVOKED_MAX	4096	/* clients remembered as told nothing yet */
#define LOCKS_WAITS_MAX		65536	/* owners remembered as waiting */
#define LOCKS_PEER_WAITS	8192	/* of them, of one peer's clients */
#define LOCKS_WAIT_FRESH	2	/* seconds a waiter is taken to wait after it asked */
#define LOCKS_DEADLK_MAX	64	/* owners followed looking for a deadlock */

struct lk_range;
struct lk_file;
struct lk_client;
struct lk_peer;
struct lk_wait;

/* Shared by every thread: each function takes the lock. */
struct locks {
	pthread_mutex_t		mu;
	pthread_cond_t		changed;	/* on CLOCK_MONOTONIC; @gen moved */
	uint64_t		gen;		/* counts changes that may free a lock */
	uint32_t		holding;	/* requests held now (locks_apply_wait()) */
	uint32_t		hold_max;	/* at most; 0: none held; a peer's: half */
	uint64_t		hold_refused;	/* waiters not held for those bounds */
	struct lk_file		*files[LOCKS_BUCKETS];
	struct lk_client	*clients[LOCKS_BUCKETS];
	struct lk_peer		*peers[LOCKS_BUCKETS];
	uint64_t		refused;	/* requests a bound refused (peer, client, all) */
	struct lk_wait		*waits[LOCKS_BUCKETS];
	uint32_t		nwaits;
	uint32_t		nranges;
	unsigned int		lease;		/* seconds a client's locks outlive it */
	time_t			grace_end;	/* until then, reclaims only */
	uint64_t		expired;	/* clients whose locks were dropped */
	uint32_t		nrevoked;	/* of those, not told yet */
};

/* One request, in host order; END is inclusive (UINT64_MAX: to the end). */
struct lk_want {
	uint64_t	client;
	uint64_t	owner;
	uint64_t	start;
	uint64_t	end;
	uint32_t	type;		/* ORFS_LOCK_READ, _WRITE or _UNLOCK */
	uint32_t	flags;		/* ORFS_LOCK_TEST, _RECLAIM, _REVOKED_SEEN, _WAIT, _HOLD */
};

/* With LEASE seconds of lease, and no grace period yet. */
void locks_init(struct locks *lk, unsigned int lease);
/*
 * A grace period of GRACE seconds starts at NOW (the server listens): at
 * least GRACE, since the clock is read in whole seconds. Call it before
 * anything else uses LK.
 */
void locks_grace(struct locks *lk, unsigned int grace, time_t now);
void locks_destroy(struct locks *lk);

/*
 * A connection of CLIENT from PEER (a key of the host it comes from)
 * opened (SESSION) or closed. locks_attach() returns 1 when the client's
 * locks were dropped at the end of its lease and it has not said it saw
 * that (the SESSION reply tells it), else 0; -EPERM when CLIENT is bound
 * to another peer, -ENOLCK when PEER holds LOCKS_PEER_CLIENTS client ids
 * already (nothing attached then). The server remembers revocations of
 * LOCKS_REVOKED_MAX clients at most, forgetting the one gone longest first.
 */
int locks_attach(struct locks *lk, uint64_t client, uint64_t peer);
void locks_detach(struct locks *lk, uint64_t client, time_t now);

/*
 * Set, clear or test a lock on file (DEV, INO). Returns 0, EAGAIN when
 * another owner's lock conflicts (in *HELD: its range and type), EBUSY in
 * the grace period, ENOLCK past a bound, after the grace period for a
 * reclaim, or for a client that never opened a session. A TEST that finds
 * nothing returns 0 with HELD->type ORFS_LOCK_UNLOCK. With ORFS_LOCK_WAIT
 * the owner waits (it will ask again): remembered so, it may be part of
 * a chain of waiters that EDEADLK answers when it would close on itself.
 */
int locks_apply(struct locks *lk, uint64_t dev, uint64_t ino, const struct lk_want *w,
		time_t now, struct lk_want *held);

/*
 * At most MAX requests held at once by locks_apply_wait() (0, the default:
 * none), and half of MAX (rounded up) for the clients of one peer. Each
 * holds the thread that called it.
 */
void locks_hold_max(struct locks *lk, uint32_t max);

/*
 * locks_apply(), with NOW from CLOCK_MONOTONIC; a request to set a lock
 * flagged ORFS_LOCK_HOLD (alone or with ORFS_LOCK_WAIT) that finds the
 * lock taken is held, while fewer than the bound are, for up to HOLD_MS:
 * it is asked again each time a lock may have been freed, and ends as
 * soon as it gets the lock or another answer than EAGAIN, or (with WAIT)
 * the owner's wait ends (another request of the owner).
 */
int locks_apply_wait(struct locks *lk, uint64_t dev, uint64_t ino, const struct lk_want *w,
		     time_t now, struct lk_want *held, unsigned int hold_ms);

/*
 * 1 when CLIENT must not write file (DEV, INO) now: its locks on the file
 * were dropped at the end of its lease, and it has not said it saw that
 * (a LOCK with ORFS_LOCK_REVOKED_SEEN). What it would write was written
 * under those locks, over what their next holder wrote: the client drops
 * it, then says so. 0 otherwise.
 */
int locks_write_refused(struct locks *lk, uint64_t client, uint64_t dev, uint64_t ino);

/* Ranges held by CLIENT (tests), or by everybody for CLIENT 0. */
uint32_t locks_count(struct locks *lk, uint64_t client);

#endif /* ORFS_SERVER_LOCKS_H */
