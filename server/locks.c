// SPDX-License-Identifier: GPL-2.0-only
/* Byte-range locks across the clients of a server (see locks.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "orfs/uapi/orfs_proto.h"
#include "server/locks.h"

struct lk_range {
	uint64_t	client, owner;
	uint64_t	start, end;	/* inclusive */
	uint32_t	type;
	struct lk_range	*next;
};

struct lk_file {
	uint64_t	dev, ino;
	struct lk_range	*ranges;
	struct lk_file	*next;
};

/* An owner that waits for a lock (asks again until it has it), and what it wants. */
struct lk_wait {
	uint64_t	client, owner;
	uint64_t	dev, ino;
	uint64_t	start, end;
	uint32_t	type;
	time_t		asked;		/* its last request */
	struct lk_peer	*peer;		/* its client's: the client's record outlives it */
	struct lk_wait	*next;
};

/* A file (device and inode of the export's file system). */
struct lk_fileid {
	uint64_t	dev, ino;
};

/*
 * A peer: the authenticated host its clients' connections come from. Its
 * client ids are bound to it, and its locks and ids bounded.
 */
struct lk_peer {
	uint64_t	key;
	uint32_t	nranges;
	uint32_t	nclients;	/* client records bound to it */
	uint32_t	holding;	/* requests of its clients held now */
	uint32_t	nwaits;		/* waits of its clients recorded */
	struct lk_peer	*next;
};

struct lk_client {
	uint64_t	id;
	struct lk_peer	*peer;		/* whose connections opened it */
	int		conns;		/* connections open now */
	time_t		gone;		/* when the last one closed */
	uint32_t	nranges;
	int		revoked;	/* its locks expired; not seen by it yet */
	struct lk_fileid *dropped;	/* then: each file it had locks on */
	uint32_t	ndropped, dropped_cap;
	int		dropped_all;	/* no memory for @dropped: every file */
	struct lk_client *next;
};

static uint32_t bucket(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ (b * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;

	return (uint32_t)(h >> 32) % LOCKS_BUCKETS;
}

void locks_init(struct locks *lk, unsigned int lease)
{
	pthread_condattr_t ca;

	memset(lk, 0, sizeof(*lk));
	pthread_mutex_init(&lk->mu, NULL);
	/* Neither fails on Linux with these attributes. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&lk->changed, &ca);
	pthread_condattr_destroy(&ca);
	lk->lease = lease;
}

void locks_hold_max(struct locks *lk, uint32_t max)
{
	pthread_mutex_lock(&lk->mu);
	lk->hold_max = max;
	pthread_mutex_unlock(&lk->mu);
}

/* Something that may free a lock happened (under LK->mu): held requests look again. */
static void changed(struct locks *lk)
{
	lk->gen++;
	if (lk->holding)
		pthread_cond_broadcast(&lk->changed);
}

void locks_grace(struct locks *lk, unsigned int grace, time_t now)
{
	/* NOW is a second begun: one more makes GRACE whole seconds at least. */
	lk->grace_end = grace ? now + grace + 1 : 0;
}

static void free_ranges(struct lk_range *r)
{
	while (r) {
		struct lk_range *next = r->next;

		free(r);
		r = next;
	}
}

void locks_destroy(struct locks *lk)
{
	uint32_t b;

	for (b = 0; b < LOCKS_BUCKETS; b++) {
		while (lk->files[b]) {
			struct lk_file *f = lk->files[b];

			lk->files[b] = f->next;
			free_ranges(f->ranges);
			free(f);
		}
		while (lk->waits[b]) {
			struct lk_wait *wt = lk->waits[b];

			lk->waits[b] = wt->next;
			free(wt);
		}
		while (lk->clients[b]) {
			struct lk_client *c = lk->clients[b];

			lk->clients[b] = c->next;
			free(c->dropped);
			free(c);
		}
		while (lk->peers[b]) {
			struct lk_peer *p = lk->peers[b];

			lk->peers[b] = p->next;
			free(p);
		}
	}
	pthread_cond_destroy(&lk->changed);
	pthread_mutex_destroy(&lk->mu);
}

static struct lk_client **client_slot(struct locks *lk, uint64_t id)
{
	struct lk_client **pp = &lk->clients[bucket(id, 0)];

	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	return pp;
}

static struct lk_peer **peer_slot(struct locks *lk, uint64_t key)
{
	struct lk_peer **pp = &lk->peers[bucket(key, 1)];

	while (*pp && (*pp)->key != key)
		pp = &(*pp)->next;
	return pp;
}

/* N more ranges (or, negative, fewer) of C: its own, its peer's, in all. */
static void ranges_add(struct locks *lk, struct lk_client *c, int n)
{
	lk->nranges += (uint32_t)n;
	c->nranges += (uint32_t)n;
	c->peer->nranges += (uint32_t)n;
}

static void wait_forget_client(struct locks *lk, uint64_t id);

/* Forget C's record (and waits) when nothing holds it: no connection, no lock. */
static void client_maybe_free(struct locks *lk, struct lk_client *c)
{
	struct lk_client **pp;
	struct lk_peer **qq;

	if (c->conns || c->nranges || c->revoked)
		return;
	wait_forget_client(lk, c->id);
	pp = client_slot(lk, c->id);
	*pp = c->next;
	if (!--c->peer->nclients) {
		qq = peer_slot(lk, c->peer->key);
		*qq = c->peer->next;
		free(c->peer);
	}
	free(c);
}

int locks_attach(struct locks *lk, uint64_t client, uint64_t peer)
{
	struct lk_client **pp, *c;
	struct lk_peer **qq, *p;
	int revoked = 0;

	pthread_mutex_lock(&lk->mu);
	pp = client_slot(lk, client);
	c = *pp;
	if (c && c->peer->key != peer) {
		/* Another host's client id: its locks and answers are not this one's. */
		lk->refused++;
		revoked = -EPERM;
		goto out;
	}
	if (!c) {
		qq = peer_slot(lk, peer);
		p = *qq;
		if (p && p->nclients >= LOCKS_PEER_CLIENTS) {
			lk->refused++;
			revoked = -ENOLCK;
			goto out;
		}
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (p) {
				p->key = peer;
				*qq = p;
			}
		}
		c = p ? calloc(1, sizeof(*c)) : NULL;
		if (c) {
			c->id = client;
			c->peer = p;
			p->nclients++;
			*pp = c;
		} else if (p && !p->nclients) {
			*qq = p->next;
			free(p);
		}
	}
	/* Without memory the client's lock requests get ENOLCK. */
	if (c) {
		c->conns++;
		revoked = c->revoked;
	}
out:
	pthread_mutex_unlock(&lk->mu);
	return revoked;
}

void locks_detach(struct locks *lk, uint64_t client, time_t now)
{
	struct lk_client *c;

	pthread_mutex_lock(&lk->mu);
	c = *client_slot(lk, client);
	if (c && c->conns > 0 && !--c->conns) {
		c->gone = now;
		client_maybe_free(lk, c);
	}
	pthread_mutex_unlock(&lk->mu);
}

static struct lk_file **file_slot(struct locks *lk, uint64_t dev, uint64_t ino)
{
	struct lk_file **pp = &lk->files[bucket(dev, ino)];

	while (*pp && ((*pp)->dev != dev || (*pp)->ino != ino))
		pp = &(*pp)->next;
	return pp;
}

static void range_gone(struct locks *lk, struct lk_range *r)
{
	struct lk_client *c = *client_slot(lk, r->client);

	if (c) {
		ranges_add(lk, c, -1);
		client_maybe_free(lk, c);
	} else {
		lk->nranges--;
	}
	free(r);
}

/* C is told, or forgotten: its record goes with nothing else holding it. */
static void unrevoke(struct locks *lk, struct lk_client *c)
{
	if (!c->revoked)
		return;
	c->revoked = 0;
	lk->nrevoked--;
	free(c->dropped);
	c->dropped = NULL;
	c->ndropped = 0;
	c->dropped_cap = 0;
	c->dropped_all = 0;
	client_maybe_free(lk, c);
}

/* Room for one more revoked client: forget the one gone longest. */
static void revoked_make_room(struct locks *lk)
{
	struct lk_client *c, *oldest = NULL;
	uint32_t b;

	if (lk->nrevoked < LOCKS_REVOKED_MAX)
		return;
	for (b = 0; b < LOCKS_BUCKETS; b++)
		for (c = lk->clients[b]; c; c = c->next)
			if (c->revoked && (!oldest || c->gone < oldest->gone))
				oldest = c;
	if (oldest)
		unrevoke(lk, oldest);
}

static struct lk_wait **wait_slot(struct locks *lk, uint64_t client, uint64_t owner)
{
	struct lk_wait **pp = &lk->waits[bucket(client, owner)];

	while (*pp && ((*pp)->client != client || (*pp)->owner != owner))
		pp = &(*pp)->next;
	return pp;
}

/* The wait at *PP goes out of its chain (and a request of its owner held for it ends). */
static void wait_drop(struct locks *lk, struct lk_wait **pp)
{
	struct lk_wait *wt = *pp;

	*pp = wt->next;
	lk->nwaits--;
	wt->peer->nwaits--;
	free(wt);
	changed(lk);
}

/* The owner (CLIENT, OWNER) waits for nothing. */
static void wait_forget(struct locks *lk, uint64_t client, uint64_t owner)
{
	struct lk_wait **pp = wait_slot(lk, client, owner);

	if (*pp)
		wait_drop(lk, pp);
}

/* Every waiter of client ID goes (its locks went). */
static void wait_forget_client(struct locks *lk, uint64_t id)
{
	uint32_t b;

	for (b = 0; b < LOCKS_BUCKETS; b++) {
		struct lk_wait **pp = &lk->waits[b];

		while (*pp) {
			if ((*pp)->client == id)
				wait_drop(lk, pp);
			else
				pp = &(*pp)->next;
		}
	}
}

/* C's locks on file F are being dropped: its writes to F are refused until it saw it. */
static void dropped_add(struct lk_client *c, const struct lk_file *f)
{
	if (c->dropped_all)
		return;
	if (c->ndropped == c->dropped_cap) {
		uint32_t cap = c->dropped_cap ? 2 * c->dropped_cap : 8;
		struct lk_fileid *d = realloc(c->dropped, sizeof(*d) * cap);

		if (!d) {
			c->dropped_all = 1;
			return;
		}
		c->dropped = d;
		c->dropped_cap = cap;
	}
	c->dropped[c->ndropped++] = (struct lk_fileid){ f->dev, f->ino };
}

/*
 * Drop every lock of client C, whose lease ran out, and keep its record to
 * tell it when it comes back, with the files they were on.
 */
static void expire(struct locks *lk, struct lk_client *c)
{
	uint64_t id = c->id;
	uint32_t b;

	lk->expired++;
	changed(lk);
	wait_forget_client(lk, id);
	if (!c->revoked) {
		revoked_make_room(lk);
		c->revoked = 1;
		lk->nrevoked++;
	}
	for (b = 0; b < LOCKS_BUCKETS; b++) {
		struct lk_file **fp = &lk->files[b];

		while (*fp) {
			struct lk_file *f = *fp;
			struct lk_range **rp = &f->ranges;
			int had = 0;

			while (*rp) {
				struct lk_range *r = *rp;

				if (r->client == id) {
					if (!had++)
						dropped_add(c, f);
					*rp = r->next;
					range_gone(lk, r);
				} else {
					rp = &r->next;
				}
			}
			if (!f->ranges) {
				*fp = f->next;
				free(f);
			} else {
				fp = &f->next;
			}
		}
	}
}

static int same_owner(const struct lk_range *r, const struct lk_want *w)
{
	return r->client == w->client && r->owner == w->owner;
}

static int overlaps(const struct lk_range *r, uint64_t start, uint64_t end)
{
	return r->start <= end && start <= r->end;
}

static int touches(const struct lk_range *r, uint64_t start, uint64_t end)
{
	return overlaps(r, start, end) || (r->end != UINT64_MAX && r->end + 1 == start) ||
	       (end != UINT64_MAX && end + 1 == r->start);
}

/* The first lock of another owner on F in W's way. */
static struct lk_range *in_the_way(struct lk_file *f, const struct lk_want *w)
{
	struct lk_range *r;

	for (r = f->ranges; r; r = r->next)
		if (!same_owner(r, w) && overlaps(r, w->start, w->end) &&
		    (r->type != ORFS_LOCK_READ || w->type != ORFS_LOCK_READ))
			return r;
	return NULL;
}

/*
 * Room is needed: drop the locks of clients gone for longer than the
 * lease (of peer P only, if not NULL), at most LOCKS_RECLAIM_BATCH of
 * them. Returns how many.
 */
#define LOCKS_RECLAIM_BATCH	64

static int reclaim_lapsed(struct locks *lk, time_t now, const struct lk_peer *p)
{
	uint64_t ids[LOCKS_RECLAIM_BATCH];
	struct lk_client *c;
	int n = 0, i;
	uint32_t b;

	/* Ids first: expiring may forget other clients' records. */
	for (b = 0; b < LOCKS_BUCKETS && n < LOCKS_RECLAIM_BATCH; b++)
		for (c = lk->clients[b]; c && n < LOCKS_RECLAIM_BATCH; c = c->next)
			if (!c->conns && c->nranges && now - c->gone >= (time_t)lk->lease &&
			    (!p || c->peer == p))
				ids[n++] = c->id;
	for (i = 0; i < n; i++) {
		c = *client_slot(lk, ids[i]);
		if (c)
			expire(lk, c);
	}
	return n;
}

/*
 * The first lock of another owner in W's way, dropping on the way the
 * locks of clients gone for longer than the lease.
 */
static struct lk_range *conflict(struct locks *lk, struct lk_file **fp, const struct lk_want *w,
				 time_t now)
{
	struct lk_client *c;
	struct lk_range *r;

again:
	r = *fp ? in_the_way(*fp, w) : NULL;
	if (!r)
		return NULL;
	c = *client_slot(lk, r->client);
	if (c && !c->conns && now - c->gone >= (time_t)lk->lease) {
		uint64_t dev = (*fp)->dev, ino = (*fp)->ino;

		expire(lk, c);
		fp = file_slot(lk, dev, ino);
		goto again;
	}
	return r;
}

/*
 * Take [START, END] out of W's owner's ranges on F, splitting one that
 * covers both sides with SPARE (set to NULL when used). Returns 1 when
 * anything was taken out.
 */
static int cut(struct locks *lk, struct lk_file *f, const struct lk_want *w,
	       struct lk_client *c, uint64_t start, uint64_t end, struct lk_range **spare)
{
	struct lk_range **rp = &f->ranges;
	int any = 0;

	while (*rp) {
		struct lk_range *r = *rp;

		if (!same_owner(r, w) || !overlaps(r, start, end)) {
			rp = &r->next;
			continue;
		}
		any = 1;
		if (r->start < start && r->end > end) {
			struct lk_range *tail = *spare;

			*spare = NULL;
			*tail = *r;
			tail->start = end + 1;
			r->end = start - 1;
			r->next = tail;
			ranges_add(lk, c, 1);
			return 1;	/* nothing else of the owner overlaps */
		}
		if (r->start < start) {
			r->end = start - 1;
		} else if (r->end > end) {
			r->start = end + 1;
		} else {
			*rp = r->next;
			range_gone(lk, r);
			continue;
		}
		rp = &r->next;
	}
	return any;
}

static void answer(struct lk_want *held, const struct lk_range *r, const struct lk_want *w)
{
	*held = *w;
	if (r) {
		held->start = r->start;
		held->end = r->end;
		held->type = r->type;
	} else if (w->flags & ORFS_LOCK_TEST) {
		held->type = ORFS_LOCK_UNLOCK;
	}
}

/*
 * W's owner waits, from NOW, for a lock of file (DEV, INO); SPARE if it is
 * new. Returns 1 when recorded.
 */
static int wait_note(struct locks *lk, const struct lk_want *w, uint64_t dev, uint64_t ino,
		     time_t now, struct lk_wait **spare)
{
	struct lk_wait **pp = wait_slot(lk, w->client, w->owner), *wt = *pp;
	struct lk_client *c = *client_slot(lk, w->client);

	if (!wt) {
		/* Unrecorded past a bound: no deadlock is found through it. */
		if (!*spare || !c || lk->nwaits >= LOCKS_WAITS_MAX)
			return 0;
		if (c->peer->nwaits >= LOCKS_PEER_WAITS) {
			lk->refused++;
			return 0;
		}
		wt = *spare;
		*spare = NULL;
		wt->client = w->client;
		wt->owner = w->owner;
		wt->peer = c->peer;
		wt->next = NULL;
		*pp = wt;
		lk->nwaits++;
		c->peer->nwaits++;
	} else if (wt->dev != dev || wt->ino != ino || wt->start != w->start ||
		   wt->end != w->end || wt->type != w->type) {
		changed(lk);	/* the owner's wait for something else ends */
	}
	wt->dev = dev;
	wt->ino = ino;
	wt->start = w->start;
	wt->end = w->end;
	wt->type = w->type;
	wt->asked = now;
	return 1;
}

/*
 * Would W's owner, waiting for R, wait for ever? Follow the owner of R to
 * the lock it waits for (if it asked within LOCKS_WAIT_FRESH seconds),
 * then that lock's holder, and so on: a deadlock if the chain comes back
 * to W's owner, as the kernel's own check goes for local POSIX locks.
 */
static int deadlock(struct locks *lk, const struct lk_want *w, const struct lk_range *r,
		    time_t now)
{
	int i;

	for (i = 0; i < LOCKS_DEADLK_MAX; i++) {
		struct lk_wait *wt = *wait_slot(lk, r->client, r->owner);
		struct lk_want want;
		struct lk_file *f;

		if (!wt || now - wt->asked > LOCKS_WAIT_FRESH)
			return 0;
		f = *file_slot(lk, wt->dev, wt->ino);
		if (!f)
			return 0;
		want = (struct lk_want){ wt->client, wt->owner, wt->start, wt->end, wt->type, 0 };
		r = in_the_way(f, &want);
		if (!r)
			return 0;
		if (same_owner(r, w))
			return 1;
	}
	return 0;
}

/* One request on its way through apply(), under LK->mu from @c on. */
struct lk_req {
	struct locks		*lk;
	uint64_t		dev;
	uint64_t		ino;
	const struct lk_want	*w;
	time_t			now;
	struct lk_want		*held;
	struct lk_client	*c;		/* the requesting client, held by a conns count */
	struct lk_range		*spare;		/* for a range cut in two */
	struct lk_range		*add;		/* the new range (LK_NEW_RANGE) */
	struct lk_wait		*wspare;	/* the owner's wait record (LK_MAY_WAIT) */
	int			noted;		/* the wait was recorded */
};

/* What an operation of lk_ops[] needs before it runs. */
#define LK_GRACE	0x1	/* the grace period's rules: reclaims only, and only then */
#define LK_NEW_RANGE	0x2	/* a range is allocated for what it sets */
#define LK_MAY_WAIT	0x4	/* with ORFS_LOCK_WAIT alone: a wait record, to detect deadlocks */

enum lk_kind { LK_TEST, LK_SET, LK_UNLOCK, LK_KINDS };

/* The file RQ is about, made if it has none; NULL without memory. */
static struct lk_file *file_get(struct lk_req *rq)
{
	struct lk_file **fp = file_slot(rq->lk, rq->dev, rq->ino), *f = *fp;

	if (f)
		return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->dev = rq->dev;
	f->ino = rq->ino;
	*fp = f;
	return f;
}

/* F, once no range is left on it, goes. */
static void file_put(struct lk_req *rq, struct lk_file *f)
{
	struct lk_file **fp;

	if (f->ranges)
		return;
	fp = file_slot(rq->lk, rq->dev, rq->ino);
	*fp = f->next;
	free(f);
}

/* ORFS_LOCK_TEST: who holds what the request would conflict with, in HELD. */
static int lk_test(struct lk_req *rq)
{
	struct lk_file **fp = file_slot(rq->lk, rq->dev, rq->ino);

	answer(rq->held, conflict(rq->lk, fp, rq->w, rq->now), rq->w);
	return 0;
}

/* ORFS_LOCK_UNLOCK: the owner's ranges in [start, end] go. */
static int lk_unlock(struct lk_req *rq)
{
	struct lk_file *f = *file_slot(rq->lk, rq->dev, rq->ino);

	answer(rq->held, NULL, rq->w);
	if (!rq->spare)
		return ENOLCK;	/* a range cut in two would need it */
	if (!f)
		return 0;
	cut(rq->lk, f, rq->w, rq->c, rq->w->start, rq->w->end, &rq->spare);
	changed(rq->lk);
	file_put(rq, f);
	return 0;
}

/*
 * A read or write lock: EAGAIN if another owner's lock is in the way (and
 * with ORFS_LOCK_WAIT, EDEADLK or the wait recorded); otherwise the
 * owner's ranges of the same type it touches join it, and it replaces
 * what the owner held of another type.
 */
static int lk_set(struct lk_req *rq)
{
	struct locks *lk = rq->lk;
	const struct lk_want *w = rq->w;
	struct lk_client *c = rq->c;
	uint64_t start = w->start, end = w->end;
	struct lk_range **rp, *r;
	struct lk_file *f;

	r = conflict(lk, file_slot(lk, rq->dev, rq->ino), w, rq->now);
	answer(rq->held, r, w);
	if (r) {
		if (w->flags != ORFS_LOCK_WAIT)
			return EAGAIN;
		if (deadlock(lk, w, r, rq->now))
			return EDEADLK;
		rq->noted = wait_note(lk, w, rq->dev, rq->ino, rq->now, &rq->wspare);
		return EAGAIN;
	}
	if (!rq->spare || !rq->add)
		return ENOLCK;
	/* At a bound of all or of its host: the locks of lapsed clients make room. */
	if (lk->nranges + 2 > LOCKS_MAX || c->peer->nranges + 2 > LOCKS_PEER_MAX)
		reclaim_lapsed(lk, rq->now, lk->nranges + 2 > LOCKS_MAX ? NULL : c->peer);
	if (lk->nranges + 2 > LOCKS_MAX || c->nranges + 2 > LOCKS_CLIENT_MAX ||
	    c->peer->nranges + 2 > LOCKS_PEER_MAX) {
		lk->refused++;	/* a bound, not memory */
		return ENOLCK;
	}
	f = file_get(rq);
	if (!f)
		return ENOLCK;
	/* The owner's ranges of this type that touch the new one join it. */
	rp = &f->ranges;
	while (*rp) {
		r = *rp;
		if (same_owner(r, w) && r->type == w->type && touches(r, start, end)) {
			start = r->start < start ? r->start : start;
			end = r->end > end ? r->end : end;
			*rp = r->next;
			ranges_add(lk, c, -1);	/* C keeps its record: it gains a range */
			free(r);
			continue;
		}
		rp = &r->next;
	}
	if (cut(lk, f, w, c, start, end, &rq->spare))
		changed(lk);
	r = rq->add;
	rq->add = NULL;
	r->client = w->client;
	r->owner = w->owner;
	r->start = start;
	r->end = end;
	r->type = w->type;
	r->next = f->ranges;
	f->ranges = r;
	ranges_add(lk, c, 1);
	rq->held->start = start;
	rq->held->end = end;
	return 0;
}

/* One handler a kind of request, as the file service's fsvc_ops[]. */
static const struct lk_op {
	int		(*run)(struct lk_req *rq);
	unsigned int	needs;
} lk_ops[LK_KINDS] = {
	[LK_TEST]	= { lk_test,	LK_GRACE },
	[LK_SET]	= { lk_set,	LK_GRACE | LK_NEW_RANGE | LK_MAY_WAIT },
	[LK_UNLOCK]	= { lk_unlock,	0 },
};

/* W's kind, or LK_KINDS if W is not a request (as fcntl(F_GETLK, F_UNLCK)). */
static enum lk_kind lk_kind(const struct lk_want *w)
{
	if (w->start > w->end || w->type < ORFS_LOCK_READ || w->type > ORFS_LOCK_UNLOCK)
		return LK_KINDS;
	if (w->type == ORFS_LOCK_UNLOCK)
		return w->flags & ORFS_LOCK_TEST ? LK_KINDS : LK_UNLOCK;
	return w->flags & ORFS_LOCK_TEST ? LK_TEST : LK_SET;
}

/* locks_apply(); *GEN (if not NULL): LK->gen as the request left it. */
static int apply(struct locks *lk, uint64_t dev, uint64_t ino, const struct lk_want *w,
		 time_t now, struct lk_want *held, uint64_t *gen)
{
	struct lk_req rq = { .lk = lk, .dev = dev, .ino = ino, .w = w, .now = now, .held = held };
	enum lk_kind kind = lk_kind(w);
	const struct lk_op *op;
	int err;

	if (kind == LK_KINDS)
		return EINVAL;
	op = &lk_ops[kind];
	/* Allocations first, outside the lock; freed below if not used. */
	rq.spare = malloc(sizeof(*rq.spare));
	if (op->needs & LK_NEW_RANGE)
		rq.add = malloc(sizeof(*rq.add));
	if ((op->needs & LK_MAY_WAIT) && w->flags == ORFS_LOCK_WAIT)
		rq.wspare = malloc(sizeof(*rq.wspare));
	pthread_mutex_lock(&lk->mu);
	rq.c = *client_slot(lk, w->client);
	if (!rq.c) {
		err = ENOLCK;
		goto out_unlocked;
	}
	rq.c->conns++;	/* C's record stays while its ranges come and go */
	/* C heard, at a SESSION, that its locks were dropped, and dealt with it. */
	if (w->flags & ORFS_LOCK_REVOKED_SEEN)
		unrevoke(lk, rq.c);
	/*
	 * Any request but a test ends a wait, and so does the test of an
	 * owner that stopped waiting; a wait asked again stays (or ends,
	 * below), so that a request held for it is not woken for nothing.
	 */
	if ((!(w->flags & ORFS_LOCK_TEST) || (w->flags & ORFS_LOCK_WAIT)) &&
	    w->flags != ORFS_LOCK_WAIT)
		wait_forget(lk, w->client, w->owner);
	if ((op->needs & LK_GRACE) && now < lk->grace_end && !(w->flags & ORFS_LOCK_RECLAIM))
		err = EBUSY;
	else if ((op->needs & LK_GRACE) && now >= lk->grace_end && (w->flags & ORFS_LOCK_RECLAIM))
		err = ENOLCK;	/* somebody may have had it meanwhile */
	else
		err = op->run(&rq);
	if (w->flags == ORFS_LOCK_WAIT && !rq.noted)
		wait_forget(lk, w->client, w->owner);
	rq.c->conns--;
	client_maybe_free(lk, rq.c);
out_unlocked:
	if (gen)
		*gen = lk->gen;
	pthread_mutex_unlock(&lk->mu);
	free(rq.spare);
	free(rq.add);
	free(rq.wspare);
	return err;
}

int locks_apply(struct locks *lk, uint64_t dev, uint64_t ino, const struct lk_want *w,
		time_t now, struct lk_want *held)
{
	return apply(lk, dev, ino, w, now, held, NULL);
}

/*
 * Does W's owner still wait for what W asks (under LK->mu)? Only an
 * ORFS_LOCK_WAIT is recorded; another (OFD, flock()) waits until answered.
 */
static int still_waits(struct locks *lk, uint64_t dev, uint64_t ino, const struct lk_want *w)
{
	const struct lk_wait *wt;

	if (w->flags != ORFS_LOCK_WAIT)
		return 1;
	wt = *wait_slot(lk, w->client, w->owner);
	return wt && wt->dev == dev && wt->ino == ino && wt->start == w->start &&
	       wt->end == w->end && wt->type == w->type;
}

static time_t mono_now(struct timespec *ts)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	return ts->tv_sec;
}

int locks_apply_wait(struct locks *lk, uint64_t dev, uint64_t ino, const struct lk_want *w,
		     time_t now, struct lk_want *held, unsigned int hold_ms)
{
	struct lk_want ww = *w;
	struct timespec until, ts;
	struct lk_client *c;
	struct lk_peer *p;
	uint64_t gen, peer;
	int err, timed_out = 0;

	if (!(w->flags & ORFS_LOCK_HOLD) || w->type == ORFS_LOCK_UNLOCK ||
	    (w->flags & ~(uint32_t)(ORFS_LOCK_WAIT | ORFS_LOCK_HOLD)))
		return locks_apply(lk, dev, ino, w, now, held);
	ww.flags &= ~(uint32_t)ORFS_LOCK_HOLD;
	err = apply(lk, dev, ino, &ww, now, held, &gen);
	if (err != EAGAIN || !hold_ms)
		return err;
	mono_now(&until);
	until.tv_sec += hold_ms / 1000;
	until.tv_nsec += (long)(hold_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&lk->mu);
	c = *client_slot(lk, w->client);
	peer = c ? c->peer->key : 0;
	p = c ? c->peer : NULL;
	if (!still_waits(lk, dev, ino, &ww)) {
		pthread_mutex_unlock(&lk->mu);
		return err;
	}
	/* Half the holds at most for one host: the others keep theirs. */
	if (lk->holding >= lk->hold_max || (p && p->holding >= (lk->hold_max + 1) / 2)) {
		lk->hold_refused++;
		pthread_mutex_unlock(&lk->mu);
		return err;
	}
	lk->holding++;
	if (p)
		p->holding++;
	for (;;) {
		while (lk->gen == gen && !timed_out)
			timed_out = pthread_cond_timedwait(&lk->changed, &lk->mu, &until) != 0;
		if (lk->gen == gen || !still_waits(lk, dev, ino, &ww))
			break;		/* time is up, or the owner asked something else */
		pthread_mutex_unlock(&lk->mu);
		err = apply(lk, dev, ino, &ww, mono_now(&ts), held, &gen);
		pthread_mutex_lock(&lk->mu);
		if (err != EAGAIN || timed_out)
			break;
	}
	lk->holding--;
	/* Found again: a SESSION of its connection may have let it go meanwhile. */
	if (p) {
		p = *peer_slot(lk, peer);
		if (p && p->holding)
			p->holding--;
	}
	pthread_mutex_unlock(&lk->mu);
	return err;
}

int locks_write_refused(struct locks *lk, uint64_t client, uint64_t dev, uint64_t ino)
{
	struct lk_client *c;
	int refused = 0;
	uint32_t i;

	pthread_mutex_lock(&lk->mu);
	c = *client_slot(lk, client);
	if (c && c->revoked) {
		refused = c->dropped_all;
		for (i = 0; i < c->ndropped && !refused; i++)
			refused = c->dropped[i].dev == dev && c->dropped[i].ino == ino;
	}
	pthread_mutex_unlock(&lk->mu);
	return refused;
}

uint32_t locks_count(struct locks *lk, uint64_t client)
{
	struct lk_client *c;
	uint32_t n;

	pthread_mutex_lock(&lk->mu);
	if (!client) {
		n = lk->nranges;
	} else {
		c = *client_slot(lk, client);
		n = c ? c->nranges : 0;
	}
	pthread_mutex_unlock(&lk->mu);
	return n;
}
